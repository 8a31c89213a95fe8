/// Points in a feature space: `count` rows of `dimension` values, row-major (one pixel per row).
public struct FeatureMatrix: Equatable, Sendable {
    public let count: Int
    public let dimension: Int
    public var values: [Double]

    /// Precondition: `values.count == count * dimension`.
    public init(count: Int, dimension: Int, values: [Double]) {
        precondition(values.count == count * dimension, "\(values.count) values do not fill \(count)x\(dimension)")
        (self.count, self.dimension, self.values) = (count, dimension, values)
    }

    /// Row `index` as an array.
    public func row(_ index: Int) -> [Double] {
        Array(values[index * dimension..<(index + 1) * dimension])
    }

    /// The rows whose mask entry is true, in order.
    public func selecting(_ mask: [Bool]) -> FeatureMatrix {
        precondition(mask.count == count)
        var selected: [Double] = []
        selected.reserveCapacity(mask.count * dimension)
        for index in 0..<count where mask[index] {
            selected.append(contentsOf: values[index * dimension..<(index + 1) * dimension])
        }
        return FeatureMatrix(count: selected.count / max(dimension, 1), dimension: dimension, values: selected)
    }

    /// Throws `ClassicalError.emptyInput` for no rows and `.nonFiniteValue` for the first NaN or infinity.
    public func validate(_ what: String = "the feature matrix") throws {
        guard count > 0, dimension > 0 else { throw ClassicalError.emptyInput(what) }
        if let index = values.firstIndex(where: { !$0.isFinite }) {
            throw ClassicalError.nonFiniteValue(index: index / dimension)
        }
    }

    /// Per-column mean and population variance (ddof 0, as numpy's `var`).
    public func columnMoments() -> (mean: [Double], variance: [Double]) {
        var mean = [Double](repeating: 0, count: dimension)
        for index in 0..<count {
            for channel in 0..<dimension { mean[channel] += values[index * dimension + channel] }
        }
        for channel in 0..<dimension { mean[channel] /= Double(max(count, 1)) }
        var variance = [Double](repeating: 0, count: dimension)
        for index in 0..<count {
            for channel in 0..<dimension {
                let delta = values[index * dimension + channel] - mean[channel]
                variance[channel] += delta * delta
            }
        }
        for channel in 0..<dimension { variance[channel] /= Double(max(count, 1)) }
        return (mean, variance)
    }

    /// Each column shifted to mean 0 and scaled to unit population standard deviation. A constant column is
    /// only shifted (it has no spread to scale).
    public func standardized() -> FeatureMatrix {
        let (mean, variance) = columnMoments()
        let scale = variance.map { $0 > 0 ? 1 / $0.squareRoot() : 1 }
        var result = values
        for index in 0..<count {
            for channel in 0..<dimension {
                let position = index * dimension + channel
                result[position] = (result[position] - mean[channel]) * scale[channel]
            }
        }
        return FeatureMatrix(count: count, dimension: dimension, values: result)
    }
}
