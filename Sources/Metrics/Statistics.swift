import SliceLabSupport

/// Descriptive statistics over cases, as numpy computes them.
public enum Statistics {
    /// The `q`-th percentile (0...100) with numpy's default linear interpolation, including numpy's `_lerp`
    /// rounding; NaN for no values. Values must not contain NaN.
    public static func percentile(_ values: [Double], _ q: Double) -> Double {
        percentileOfSorted(values.sorted(), q)
    }

    /// `percentile` on values already sorted ascending.
    public static func percentileOfSorted(_ sorted: [Double], _ q: Double) -> Double {
        Percentile.ofSorted(sorted, q)
    }

    /// The arithmetic mean; NaN for no values.
    public static func mean(_ values: [Double]) -> Double {
        values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count)
    }

    /// The sample standard deviation with `ddof` delta degrees of freedom (numpy `std(ddof=)`); NaN when
    /// fewer than `ddof + 1` values.
    public static func standardDeviation(_ values: [Double], ddof: Int = 1) -> Double {
        guard values.count > ddof else { return .nan }
        let m = mean(values)
        let squares = values.reduce(0) { $0 + ($1 - m) * ($1 - m) }
        return (squares / Double(values.count - ddof)).squareRoot()
    }

    /// Percentile-bootstrap confidence interval of the mean: `resamples` resamples of the values with
    /// replacement, drawn from `SeededGenerator(seed:)`, and the (1−level)/2 and (1+level)/2 percentiles
    /// of their means. NaN for no values.
    public static func bootstrapMeanInterval(
        _ values: [Double], level: Double = 0.95, resamples: Int = 2000,
        seed: UInt64
    ) -> (low: Double, high: Double) {
        guard !values.isEmpty, resamples > 0 else { return (.nan, .nan) }
        var generator = SeededGenerator(seed: seed)
        var means = [Double](repeating: 0, count: resamples)
        let n = values.count
        for b in 0..<resamples {
            var sum = 0.0
            for _ in 0..<n { sum += values[generator.index(below: n)] }
            means[b] = sum / Double(n)
        }
        means.sort { $0 < $1 || (!$0.isNaN && $1.isNaN) }
        let tail = (1 - level) / 2 * 100
        return (percentileOfSorted(means, tail), percentileOfSorted(means, 100 - tail))
    }
}

/// The summary of one metric of one class over cases: what `/runs/<run>/summary/<name>` holds.
///
/// NaN values (undefined metrics, see `EmptyRule`) are excluded and counted; +∞ (a distance with one mask
/// empty) is kept, so a mean over a failed case is +∞ as in MONAI's reductions.
public struct MetricSummary: Sendable, Equatable {
    public var mean: Double
    /// Sample standard deviation, ddof = 1 (NaN below two values).
    public var standardDeviation: Double
    public var median: Double
    /// 25th and 75th percentiles (numpy linear); IQR = q75 − q25.
    public var lowerQuartile: Double
    public var upperQuartile: Double
    /// 95 % percentile-bootstrap interval of the mean.
    public var confidenceLow: Double
    public var confidenceHigh: Double
    /// Values that are not NaN (+∞ included).
    public var validCount: Int
    public var nanCount: Int
    public var infiniteCount: Int

    /// The standard deviation's delta degrees of freedom.
    public static let ddof = 1

    /// Summarises `values` (one per case) with a bootstrap seeded by `seed`.
    public init(_ values: [Double], seed: UInt64, resamples: Int = 2000) {
        let valid = values.filter { !$0.isNaN }
        let sorted = valid.sorted()
        mean = Statistics.mean(valid)
        standardDeviation = Statistics.standardDeviation(valid, ddof: Self.ddof)
        median = Statistics.percentileOfSorted(sorted, 50)
        lowerQuartile = Statistics.percentileOfSorted(sorted, 25)
        upperQuartile = Statistics.percentileOfSorted(sorted, 75)
        (confidenceLow, confidenceHigh) = Statistics.bootstrapMeanInterval(valid, resamples: resamples, seed: seed)
        validCount = valid.count
        nanCount = values.count - valid.count
        infiniteCount = valid.filter { $0.isInfinite }.count
    }

    /// The interquartile range.
    public var interquartileRange: Double { upperQuartile - lowerQuartile }

    /// The six columns of the results file: mean, std, median, ci_low, ci_high, n_valid.
    public var row: [Double] { [mean, standardDeviation, median, confidenceLow, confidenceHigh, Double(validCount)] }
}
