/// Gray values of an image, kept in the type they came in: the histogram rules differ between the two.
public enum Intensities: Sendable, Equatable {
    /// Integer samples (8-bit, 16-bit, stored CT values): one histogram bin per integer value.
    case integer([Int])
    /// Real samples: 256 equal bins over [min, max] unless told otherwise.
    case real([Double])

    public var count: Int {
        switch self {
        case .integer(let values): return values.count
        case .real(let values): return values.count
        }
    }

    /// The values as doubles.
    public var doubles: [Double] {
        switch self {
        case .integer(let values): return values.map(Double.init)
        case .real(let values): return values
        }
    }

    /// The first value (nil when empty).
    public var first: Double? {
        switch self {
        case .integer(let values): return values.first.map(Double.init)
        case .real(let values): return values.first
        }
    }

    /// The values at the positions where `mask` is true.
    public func selecting(_ mask: [Bool]) -> Intensities {
        switch self {
        case .integer(let values): return .integer(zip(values, mask).compactMap { $1 ? $0 : nil })
        case .real(let values): return .real(zip(values, mask).compactMap { $1 ? $0 : nil })
        }
    }
}

/// A 1-D histogram with the bin rules of `skimage.exposure.histogram(…, source_range='image')`.
public struct Histogram: Sendable, Equatable {
    /// Pixels per bin.
    public let counts: [Int]
    /// The value each bin stands for: the integer itself, or the midpoint of a real bin's edges.
    public let binCenters: [Double]

    public init(counts: [Int], binCenters: [Double]) {
        precondition(counts.count == binCenters.count)
        (self.counts, self.binCenters) = (counts, binCenters)
    }

    /// The most integer bins built before refusing (2^24: a 24-bit range).
    public static let maximumIntegerBins = 1 << 24

    /// The histogram of `values`: one bin per integer from min to max for integers (`binCount` ignored, as
    /// skimage's bincount path); `binCount` equal bins over [min, max] for reals, with numpy's edges
    /// (`linspace`, last bin closed) and centres (midpoints of the edges).
    ///
    /// - Throws: `ClassicalError.emptyInput` for no values, `.nonFiniteValue` for NaN or infinity,
    ///   `.invalidArgument` for an integer range wider than `maximumIntegerBins` or `binCount < 1`.
    public init(_ values: Intensities, binCount: Int = 256) throws {
        guard values.count > 0 else { throw ClassicalError.emptyInput("the image") }
        switch values {
        case .integer(let samples):
            let (low, high) = (samples.min() ?? 0, samples.max() ?? 0)
            guard high - low < Self.maximumIntegerBins else {
                throw ClassicalError.invalidArgument(
                    "integer range \(low)...\(high) needs more than \(Self.maximumIntegerBins) histogram bins")
            }
            var counts = [Int](repeating: 0, count: high - low + 1)
            for sample in samples { counts[sample - low] += 1 }
            self.init(counts: counts, binCenters: (low...high).map(Double.init))
        case .real(let samples):
            guard binCount >= 1 else { throw ClassicalError.invalidArgument("histogram needs at least one bin") }
            if let index = samples.firstIndex(where: { !$0.isFinite }) {
                throw ClassicalError.nonFiniteValue(index: index)
            }
            var (first, last) = (samples.min() ?? 0, samples.max() ?? 0)
            if first == last { (first, last) = (first - 0.5, last + 0.5) }
            let edges = Self.linspace(first, last, count: binCount + 1)
            var counts = [Int](repeating: 0, count: binCount)
            let width = last - first
            for sample in samples {
                var index = Int((sample - first) / width * Double(binCount))
                index = min(max(index, 0), binCount - 1)
                while index > 0, sample < edges[index] { index -= 1 }
                while index < binCount - 1, sample >= edges[index + 1] { index += 1 }
                counts[index] += 1
            }
            let centers = (0..<binCount).map { (edges[$0] + edges[$0 + 1]) / 2.0 }
            self.init(counts: counts, binCenters: centers)
        }
    }

    /// `numpy.linspace(start, stop, count)`: `start + i * step`, the last point exactly `stop`.
    static func linspace(_ start: Double, _ stop: Double, count: Int) -> [Double] {
        let step = (stop - start) / Double(count - 1)
        var points = (0..<count).map { Double($0) * step + start }
        points[count - 1] = stop
        return points
    }

    /// The number of bins that hold at least one pixel.
    public var occupiedBinCount: Int { counts.filter { $0 > 0 }.count }
}
