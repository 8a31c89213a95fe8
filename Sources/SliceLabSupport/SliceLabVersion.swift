/// SliceLab's version, written into every results file and checkpoint it produces.
public let sliceLabVersion = "0.1.0"
