import DeepLab

/// Class labels [N, H, W] (or [H, W] for one image) in row-major order, one class index per pixel.
/// A pixel equal to the loss's ignore label contributes nothing to losses or gradients.
public struct LabelTensor: Equatable, Sendable {
    public var shape: [Int]
    public var values: [Int32]

    /// Precondition: `values.count` equals the product of `shape`.
    public init(shape: [Int], values: [Int32]) {
        precondition(shape.reduce(1, *) == values.count, "LabelTensor: \(values.count) values for shape \(shape)")
        self.shape = shape
        self.values = values
    }

    /// Labels stored as unsigned 16-bit values (PNG and DICOM SEG label maps).
    public init(shape: [Int], values: [UInt16]) {
        self.init(shape: shape, values: values.map { Int32($0) })
    }

    /// Checks that every value lies in `0..<classCount` or equals `ignoreLabel`.
    ///
    /// - Throws: `TrainingError.labelOutOfRange` with the first offending value.
    public func validate(classCount: Int, ignoreLabel: Int32?) throws {
        for value in values where value < 0 || Int(value) >= classCount {
            if let ignoreLabel, value == ignoreLabel { continue }
            throw TrainingError.labelOutOfRange(value: Int(value), classCount: classCount)
        }
    }
}
