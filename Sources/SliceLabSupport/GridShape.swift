/// The shape of a 2-D image (`slices == 1`, `isVolume == false`) or a 3-D volume, row-major with columns
/// varying fastest: index = (slice × rows + row) × columns + column.
public struct GridShape: Equatable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let slices: Int
    public let rows: Int
    public let columns: Int
    /// Whether the grid is a volume (neighbours across slices exist) rather than one image.
    public let isVolume: Bool

    /// A 2-D image of `rows × columns`.
    public init(rows: Int, columns: Int) {
        (slices, self.rows, self.columns, isVolume) = (1, rows, columns, false)
    }

    /// A 3-D volume of `slices × rows × columns`.
    public init(slices: Int, rows: Int, columns: Int) {
        (self.slices, self.rows, self.columns, isVolume) = (slices, rows, columns, true)
    }

    /// The shape of `dimensions` (`[rows, columns]` or `[slices, rows, columns]`); nil for any other count.
    public init?(dimensions: [Int]) {
        switch dimensions.count {
        case 2: self.init(rows: dimensions[0], columns: dimensions[1])
        case 3: self.init(slices: dimensions[0], rows: dimensions[1], columns: dimensions[2])
        default: return nil
        }
    }

    /// The number of pixels (voxels).
    public var count: Int { slices * rows * columns }

    /// The dimensions as an array: `[rows, columns]` or `[slices, rows, columns]`.
    public var dimensions: [Int] { isVolume ? [slices, rows, columns] : [rows, columns] }

    /// Whether some dimension is zero or negative.
    public var isEmpty: Bool { slices <= 0 || rows <= 0 || columns <= 0 }

    public var description: String { dimensions.description }
}

/// A label per pixel (voxel) over a grid with its spacing: a class map (`UInt16`, as metrics take it) or a
/// region map (`Int32`, as connected components number regions).
public struct LabelGrid<Label: FixedWidthInteger & Sendable>: Equatable, Sendable {
    public let shape: GridShape
    /// The distance between neighbouring pixels along each of `shape.dimensions`, in millimetres.
    public let spacing: [Double]
    public var labels: [Label]

    /// Precondition: `labels.count == shape.count` and one spacing per dimension (default 1 mm).
    public init(shape: GridShape, spacing: [Double]? = nil, labels: [Label]) {
        precondition(labels.count == shape.count, "label count \(labels.count) does not fill \(shape)")
        let spacing = spacing ?? shape.dimensions.map { _ in 1 }
        precondition(spacing.count == shape.dimensions.count, "spacing \(spacing) does not match \(shape)")
        (self.shape, self.spacing, self.labels) = (shape, spacing, labels)
    }

    /// The volume of one voxel (or the area of one pixel) in mm³ (mm²).
    public var voxelVolume: Double { spacing.reduce(1, *) }

    /// The largest label present, or 0 for an empty map.
    public var maximumLabel: Int { Int(labels.max() ?? 0) }

    /// The largest label plus one (0 for an empty map).
    public var labelBound: Int { labels.isEmpty ? 0 : Int(labels.max()!) + 1 }

    /// The binary mask of one class.
    public func mask(of label: Int) -> [Bool] {
        let value = Label(truncatingIfNeeded: label)
        return labels.map { $0 == value }
    }
}
