import SliceLabSupport

extension LabelGrid where Label == UInt16 {
    /// A 2-D or 3-D label map with its voxel spacing, checked.
    ///
    /// - Parameters:
    ///   - shape: `[rows, columns]` or `[slices, rows, columns]`; `labels` are row-major (C order) over it.
    ///   - spacing: one value per axis in millimetres, in the same order.
    /// - Throws: `MetricsError.unsupportedShape`, `.invalidSpacing`, or `.invalidArgument` when the label count
    ///   does not match the shape.
    public init(shape: [Int], spacing: [Double], labels: [UInt16]) throws {
        guard let grid = GridShape(dimensions: shape), !grid.isEmpty else {
            throw MetricsError.unsupportedShape(shape)
        }
        guard spacing.count == shape.count, spacing.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw MetricsError.invalidSpacing(spacing)
        }
        guard grid.count == labels.count else {
            throw MetricsError.invalidArgument("label map of shape \(shape) cannot hold \(labels.count) labels")
        }
        self.init(shape: grid, spacing: spacing, labels: labels)
    }
}
