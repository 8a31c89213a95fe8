import Foundation
import SliceLabSupport

/// How raw image intensities become network input, chosen per labeled set, stored in the checkpoint and
/// applied again at inference, so a model always sees what it was trained on. Codable as the labeled set's
/// `dataset.json` writes it: `{"normalize": "window", "center": 40, "width": 400}`,
/// `{"normalize": "percentile", "low": 0.5, "high": 99.5}`, `{"normalize": "zscore"}`, `{"normalize": "minmax"}`,
/// `{"normalize": "ct", "low": -1000, "high": 1200, "mean": 40, "std": 300}`, `{"normalize": "none"}`.
public enum Preprocessing: Codable, Equatable, Sendable {
    /// Intensities unchanged.
    case none
    /// A CT window: clip to center ± width/2 (in the image's units, e.g. Hounsfield) and scale to [0, 1].
    case window(center: Double, width: Double)
    /// Clip to the image's `low` and `high` percentiles (0...100, linear interpolation as numpy's default)
    /// and scale to [0, 1]: robust for MR, whose intensities have no absolute scale.
    case percentile(low: Double, high: Double)
    /// Subtract the image's mean and divide by its standard deviation. The image is the whole case, as nnU-Net's
    /// `ZScoreNormalization`: a volume's slices share its statistics (`forCase(_:)`), a 2-D case is its own.
    case zScore
    /// Scale the image's minimum to 0 and maximum to 1.
    case minMax
    /// nnU-Net's CT normalisation: clip to fixed bounds `low`…`high` (in the image's units: the training set's
    /// foreground 0.5 and 99.5 percentiles), then subtract the training foreground's `mean` and divide by its
    /// `standardDeviation`. Fixed numbers, so every image, slice or tile is normalised the same way.
    case clippedZScore(low: Double, high: Double, mean: Double, standardDeviation: Double)

    private enum CodingKeys: String, CodingKey { case normalize, center, width, low, high, mean, std }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let kind = try container.decode(String.self, forKey: .normalize)
        switch kind {
        case "none": self = .none
        case "window":
            self = .window(
                center: try container.decode(Double.self, forKey: .center),
                width: try container.decode(Double.self, forKey: .width))
        case "percentile":
            self = .percentile(
                low: try container.decodeIfPresent(Double.self, forKey: .low) ?? 0.5,
                high: try container.decodeIfPresent(Double.self, forKey: .high) ?? 99.5)
        case "zscore": self = .zScore
        case "minmax": self = .minMax
        case "ct":
            self = .clippedZScore(
                low: try container.decode(Double.self, forKey: .low),
                high: try container.decode(Double.self, forKey: .high),
                mean: try container.decode(Double.self, forKey: .mean),
                standardDeviation: try container.decode(Double.self, forKey: .std))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .normalize, in: container,
                debugDescription:
                    "unknown normalization \"\(kind)\" (expected none, window, percentile, zscore, minmax or ct)")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .none: try container.encode("none", forKey: .normalize)
        case .window(let center, let width):
            try container.encode("window", forKey: .normalize)
            try container.encode(center, forKey: .center)
            try container.encode(width, forKey: .width)
        case .percentile(let low, let high):
            try container.encode("percentile", forKey: .normalize)
            try container.encode(low, forKey: .low)
            try container.encode(high, forKey: .high)
        case .zScore: try container.encode("zscore", forKey: .normalize)
        case .minMax: try container.encode("minmax", forKey: .normalize)
        case .clippedZScore(let low, let high, let mean, let standardDeviation):
            try container.encode("ct", forKey: .normalize)
            try container.encode(low, forKey: .low)
            try container.encode(high, forKey: .high)
            try container.encode(mean, forKey: .mean)
            try container.encode(standardDeviation, forKey: .std)
        }
    }

    /// The JSON form, as stored in checkpoints (keys sorted, the form `init(from:)` reads).
    public var json: String {
        switch self {
        case .none: return #"{"normalize":"none"}"#
        case .window(let center, let width): return #"{"center":\#(center),"normalize":"window","width":\#(width)}"#
        case .percentile(let low, let high): return #"{"high":\#(high),"low":\#(low),"normalize":"percentile"}"#
        case .zScore: return #"{"normalize":"zscore"}"#
        case .minMax: return #"{"normalize":"minmax"}"#
        case .clippedZScore(let low, let high, let mean, let deviation):
            return #"{"high":\#(high),"low":\#(low),"mean":\#(mean),"normalize":"ct","std":\#(deviation)}"#
        }
    }

    /// Checks the parameters.
    ///
    /// - Throws: `DeepLabError.invalidPreprocessing` for a non-positive window width, percentiles outside
    ///   0 ≤ low < high ≤ 100, or CT bounds that are not finite with low ≤ high and a positive deviation.
    public func validate() throws {
        switch self {
        case .window(let center, let width) where !(width > 0 && width.isFinite && center.isFinite):
            throw DeepLabError.invalidPreprocessing(
                "the window needs a finite center and a positive width, not \(center) and \(width)")
        case .percentile(let low, let high) where !(0 <= low && low < high && high <= 100):
            throw DeepLabError.invalidPreprocessing(
                "percentiles must satisfy 0 ≤ low < high ≤ 100, not \(low) and \(high)")
        case .clippedZScore(let low, let high, let mean, let deviation)
        where !([low, high, mean, deviation].allSatisfy(\.isFinite) && low <= high && deviation > 0):
            throw DeepLabError.invalidPreprocessing(
                "ct needs finite low ≤ high, a finite mean and a positive std, not \(low), \(high), "
                    + "\(mean) and \(deviation)")
        default: return
        }
    }

    /// Applies the normalization to one image's values (all channels together). A constant image maps to 0
    /// under min–max, percentile and z-score.
    public func apply(to values: inout [Float]) {
        guard !values.isEmpty else { return }
        func scale(low: Double, high: Double) {
            let range = high - low
            for i in values.indices {
                let clipped = min(max(Double(values[i]), low), high)
                values[i] = range > 0 ? Float((clipped - low) / range) : 0
            }
        }
        switch self {
        case .none: return
        case .window(let center, let width): scale(low: center - width / 2, high: center + width / 2)
        case .percentile(let low, let high):
            let bounds = Percentile.of(values, [low, high])
            scale(low: bounds[0], high: bounds[1])
        case .minMax: scale(low: Double(values.min() ?? 0), high: Double(values.max() ?? 0))
        case .zScore:
            let count = Double(values.count)
            let mean = values.reduce(0.0) { $0 + Double($1) } / count
            let variance = values.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / count
            let deviation = variance.squareRoot()
            for i in values.indices { values[i] = deviation > 0 ? Float((Double(values[i]) - mean) / deviation) : 0 }
        case .clippedZScore(let low, let high, let mean, let deviation):
            for i in values.indices { values[i] = Float((min(max(Double(values[i]), low), high) - mean) / deviation) }
        }
    }

    /// Whether the normalisation takes statistics of the whole case, so the inputs of a volume's slices need
    /// `forCase(_:)` first: z-score only (percentile and min–max windows stay per network input, as SliceLab's
    /// 2-D models were trained).
    public var usesCaseStatistics: Bool { self == .zScore }

    /// The mean and population standard deviation of a case's values (all channels) in Float64, added one
    /// slice at a time: each slice by the two passes `apply` makes over one image, slices combined by Chan et
    /// al.'s pairwise update, so one slice gives exactly what `apply` computes for it.
    public struct CaseStatistics {
        private var count = 0.0, mean = 0.0, squares = 0.0
        public init() {}

        public mutating func add(_ values: [Float]) {
            guard !values.isEmpty else { return }
            let n = Double(values.count)
            let sliceMean = values.reduce(0.0) { $0 + Double($1) } / n
            let sliceSquares = values.reduce(0.0) { $0 + (Double($1) - sliceMean) * (Double($1) - sliceMean) }
            let total = count + n
            let delta = sliceMean - mean
            squares += sliceSquares + delta * delta * count * n / total
            mean = count == 0 ? sliceMean : mean + delta * n / total
            count = total
        }

        public var value: (mean: Double, standardDeviation: Double) {
            count > 0 ? (mean, (squares / count).squareRoot()) : (0, 0)
        }
    }

    /// The normalisation of one input of a case whose statistics are `statistics`: z-score with the case's
    /// fixed mean and deviation (the same arithmetic as `apply` on the whole case; a constant case maps to 0);
    /// every other normalisation unchanged. For use at run time only: the result is not a stored form.
    public func forCase(_ statistics: (mean: Double, standardDeviation: Double)) -> Preprocessing {
        guard usesCaseStatistics else { return self }
        return .clippedZScore(
            low: -.infinity, high: .infinity, mean: statistics.mean,
            standardDeviation: statistics.standardDeviation > 0 ? statistics.standardDeviation : 1)
    }
}
