/// The paired comparison of one metric of one class between two runs on the same cases:
/// what `/comparisons/<runA>__<runB>/<name>` holds per class.
///
/// Cases where either value is NaN are left out (complete pairs); the difference is A − B.
public struct PairedComparison: Sendable, Equatable {
    public var meanDifference: Double
    /// 95 % percentile-bootstrap interval of the mean difference (resampling cases).
    public var confidenceLow: Double
    public var confidenceHigh: Double
    public var wilcoxon: WilcoxonSignedRank
    /// Pairs used.
    public var pairCount: Int

    /// - Throws: `MetricsError.unpairedRuns` when the runs hold different case counts.
    public init(_ a: [Double], _ b: [Double], seed: UInt64, resamples: Int = 2000) throws {
        guard a.count == b.count else {
            throw MetricsError.unpairedRuns(reason: "\(a.count) cases against \(b.count)")
        }
        let differences = zip(a, b).map { $0 - $1 }.filter { !$0.isNaN }
        meanDifference = Statistics.mean(differences)
        (confidenceLow, confidenceHigh) = Statistics.bootstrapMeanInterval(
            differences, resamples: resamples,
            seed: seed)
        wilcoxon = WilcoxonSignedRank(differences: differences)
        pairCount = differences.count
    }

    /// The four columns of the results file: mean difference, ci_low, ci_high, wilcoxon_p.
    public var row: [Double] { [meanDifference, confidenceLow, confidenceHigh, wilcoxon.pValue] }
}
