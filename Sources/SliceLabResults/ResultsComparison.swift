import Metrics
import SliceLabDatasets
import SliceLabIO

/// The paired comparison of two runs on the same cases: for every metric and class the mean difference A − B,
/// its bootstrap interval and the Wilcoxon signed-rank p-value (`/comparisons/<A>__<B>/<name>`).
public struct ResultsComparison: Sendable {
    public let runA: String
    public let runB: String
    public let classNames: [String]
    /// `rows[metric][class]`.
    public let rows: [MetricName: [PairedComparison]]
    public let bootstrapSeed: UInt64
    public let bootstrapResamples: Int

    /// The group name under `/comparisons`.
    public var groupName: String { "\(runA)__\(runB)" }

    /// Compares run `a` with run `b`, pairing cases by id.
    ///
    /// - Throws: `MetricsError.unpairedRuns` when the runs do not hold the same case ids or classes.
    public init(_ a: ResultsRun, _ b: ResultsRun, seed: UInt64 = 0, resamples: Int = 2000) throws {
        guard a.classNames == b.classNames else {
            throw MetricsError.unpairedRuns(
                reason: "'\(a.name)' has classes \(a.classNames), '\(b.name)' \(b.classNames)")
        }
        let indexInB = Dictionary(b.caseIDs.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        guard Set(a.caseIDs) == Set(b.caseIDs), a.caseCount == b.caseCount else {
            let missing = Set(a.caseIDs).symmetricDifference(b.caseIDs).sorted().prefix(5)
            throw MetricsError.unpairedRuns(
                reason: "'\(a.name)' and '\(b.name)' differ in cases, e.g. \(missing.joined(separator: ", "))")
        }
        let order = a.caseIDs.compactMap { indexInB[$0] }
        var rows = [MetricName: [PairedComparison]]()
        for metric in a.metrics.metrics where b.metrics[metric] != nil {  // metrics both runs hold
            rows[metric] = try (0..<a.classCount).map { c in
                let valuesB = b.values(metric, classIndex: c)
                return try PairedComparison(
                    a.values(metric, classIndex: c), order.map { valuesB[$0] },
                    seed: subSeed(seed, metric, c), resamples: resamples)
            }
        }
        (runA, runB, classNames, self.rows) = (a.name, b.name, a.classNames, rows)
        (bootstrapSeed, bootstrapResamples) = (seed, resamples)
    }
}
