import ImageIO

/// SliceLab's version, written into every results file and checkpoint it produces.
public let sliceLabVersion = "0.1.0"

/// Bounds on what the readers of outside files allocate (`--max-memory`), re-exported for the executable.
public typealias ReadLimits = ImageIO.ReadLimits
