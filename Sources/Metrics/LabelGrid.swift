/// A 2-D or 3-D label map with its voxel spacing.
///
/// `labels` are row-major (C order) over `shape`: `[rows, columns]` or `[slices, rows, columns]`. `spacing`
/// holds one value per axis in millimetres, in the same order.
public struct LabelGrid: Sendable, Equatable {
    public let shape: [Int]
    public let spacing: [Double]
    public let labels: [UInt16]

    /// - Throws: `MetricsError.unsupportedShape`, `.invalidSpacing`, or `.invalidArgument` when the label count
    ///   does not match the shape.
    public init(shape: [Int], spacing: [Double], labels: [UInt16]) throws {
        guard (2...3).contains(shape.count), shape.allSatisfy({ $0 > 0 }) else {
            throw MetricsError.unsupportedShape(shape)
        }
        guard spacing.count == shape.count, spacing.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw MetricsError.invalidSpacing(spacing)
        }
        guard shape.reduce(1, *) == labels.count else {
            throw MetricsError.invalidArgument("label map of shape \(shape) cannot hold \(labels.count) labels")
        }
        (self.shape, self.spacing, self.labels) = (shape, spacing, labels)
    }

    /// The volume of one voxel (or the area of one pixel) in mm³ (mm²).
    public var voxelVolume: Double { spacing.reduce(1, *) }

    /// The largest label present, or 0 for an empty map.
    public var maximumLabel: Int { Int(labels.max() ?? 0) }

    /// The binary mask of one class.
    public func mask(of label: Int) -> [Bool] {
        let value = UInt16(truncatingIfNeeded: label)
        return labels.map { $0 == value }
    }
}
