/// The shape of a 2-D image (`slices == 1`, `isVolume == false`) or a 3-D volume, row-major with columns
/// varying fastest: index = (slice × rows + row) × columns + column.
public struct GridShape: Equatable, Hashable, Sendable, Codable {
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

    /// The number of pixels (voxels).
    public var count: Int { slices * rows * columns }

    /// The dimensions as an array: `[rows, columns]` or `[slices, rows, columns]`.
    public var dimensions: [Int] { isVolume ? [slices, rows, columns] : [rows, columns] }

    /// Throws unless every dimension is positive.
    public func validate() throws {
        guard slices > 0, rows > 0, columns > 0 else {
            throw ClassicalError.emptyInput("image of shape \(dimensions)")
        }
    }
}

/// A label per pixel (voxel): a class map or a region map.
public struct LabelGrid: Equatable, Sendable {
    public let shape: GridShape
    public var labels: [Int32]

    /// Precondition: `labels.count == shape.count`.
    public init(shape: GridShape, labels: [Int32]) {
        precondition(labels.count == shape.count, "label count \(labels.count) does not fill \(shape)")
        self.shape = shape
        self.labels = labels
    }

    /// The largest label plus one (0 for an empty map).
    public var labelBound: Int { Int(labels.max() ?? -1) + 1 }
}
