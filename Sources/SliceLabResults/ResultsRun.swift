import Foundation
import Metrics
import SliceLabDatasets
import SliceLabIO
import SliceLabSupport

/// One evaluated run: every metric of every case and class, ready for `ResultsFile`.
///
/// Layout of the arrays: `metrics[name]` is row-major `[cases, classes]`, `confusion` `[cases, classes, classes]`
/// (reference row, prediction column), `spacing` `[cases, 3]` (slice, row, column; mm).
public struct ResultsRun: Sendable {
    public var name: String
    /// What produced the predictions ("deeplabv3", "kmeans", "labels").
    public var method: String
    /// The model file or classical specification ("" when none).
    public var model: String
    /// The data set or reference folder.
    public var dataset: String
    /// ISO 8601 creation time.
    public var created: String
    /// The run's configuration as JSON (recorded verbatim).
    public var configJSON: String
    /// How the model's output was post-processed (`compare --post`), as JSON; the `postprocessing` attribute.
    public var postprocessingJSON: String?
    /// How the evaluated split was chosen (`--fold`, the splits file or `--split-seed`), as JSON; the `split`
    /// attribute, for nnU-Net and Decathlon sets.
    public var splitJSON: String?
    public var settings: EvaluationSettings
    public var caseIDs: [String]
    public var classNames: [String]
    public var spacing: [Double]
    /// Per metric, row-major [cases, classes]; a metric the run was not evaluated with is absent.
    public var metrics: MetricTable
    public var confusion: [Int64]
    /// Predicted label maps to store under `labels/<case>` (optional).
    public var labels: [String: LabelMap]
    /// The seed and resample count of every bootstrap interval in the summary.
    public var bootstrapSeed: UInt64
    public var bootstrapResamples: Int

    /// Assembles a run from per-case metrics in case order.
    ///
    /// - Parameters:
    ///   - cases: `(id, spacing (slice, row, column) mm, metrics)` per case.
    /// - Throws: `ResultsError.invalidRunName`, `.inconsistentRun` when a case has another class count.
    public init(
        name: String, method: String, model: String = "", dataset: String, configJSON: String = "{}",
        settings: EvaluationSettings, classNames: [String],
        cases: [(id: String, spacing: [Double], metrics: CaseMetrics)],
        labels: [String: LabelMap] = [:], bootstrapSeed: UInt64 = 0, bootstrapResamples: Int = 2000,
        created: Date = Date()
    ) throws {
        try Self.validate(name: name)
        let k = settings.classCount
        guard classNames.count == k else {
            throw ResultsError.inconsistentRun(run: name, reason: "\(classNames.count) class names for \(k) classes")
        }
        var metrics = MetricTable()
        var confusion: [Int64] = []
        var spacing: [Double] = []
        for (id, caseSpacing, values) in cases {
            guard values.confusion.classCount == k, caseSpacing.count == 3 else {
                throw ResultsError.inconsistentRun(
                    run: name, reason: "case '\(id)' has \(values.confusion.classCount) classes, spacing \(caseSpacing)"
                )
            }
            metrics.append(values.values)
            confusion += values.confusion.counts
            spacing += caseSpacing
        }
        self.name = name
        (self.method, self.model, self.dataset, self.configJSON) = (method, model, dataset, configJSON)
        self.created = Self.isoTimestamp(created)
        (self.settings, self.classNames, self.caseIDs) = (settings, classNames, cases.map(\.id))
        (self.spacing, self.metrics, self.confusion, self.labels) = (spacing, metrics, confusion, labels)
        (self.bootstrapSeed, self.bootstrapResamples) = (bootstrapSeed, bootstrapResamples)
    }

    /// `created` as ISO 8601 in UTC with an explicit offset ("2026-11-29T22:15:03+00:00"), which every
    /// `datetime.fromisoformat` reads.
    static func isoTimestamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ssxxx"
        return formatter.string(from: date)
    }

    /// Checks a run name is usable as an HDF5 group name.
    public static func validate(name: String) throws {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw ResultsError.invalidRunName(name)
        }
    }

    public var caseCount: Int { caseIDs.count }
    public var classCount: Int { classNames.count }

    /// The values of `metric` for class `c` over cases: NaN for each case when the run lacks the metric.
    public func values(_ metric: MetricName, classIndex c: Int) -> [Double] {
        guard let all = metrics[metric] else { return [Double](repeating: .nan, count: caseCount) }
        return (0..<caseCount).map { all[$0 * classCount + c] }
    }

    /// Per-class summaries of `metric` (seed offset by metric and class so intervals are independent).
    public func summaries(_ metric: MetricName) -> [MetricSummary] {
        (0..<classCount).map { c in
            MetricSummary(
                values(metric, classIndex: c), seed: subSeed(bootstrapSeed, metric, c),
                resamples: bootstrapResamples)
        }
    }

    /// The mean over foreground classes (1...) of the per-class means that are not NaN; NaN when none.
    public static func foregroundMean(_ summaries: [MetricSummary]) -> Double {
        let means = summaries.dropFirst().map(\.mean).filter { !$0.isNaN }
        return means.isEmpty ? .nan : means.reduce(0, +) / Double(means.count)
    }
}

/// A per-metric, per-class seed derived from a run's recorded seed and the metric's name (the first draw seeded by
/// the triple): adding a metric moves no other metric's intervals.
func subSeed(_ seed: UInt64, _ metric: MetricName, _ classIndex: Int) -> UInt64 {
    var generator = SeededGenerator(seed: seed &+ metric.stableHash &* 1_000_003 &+ UInt64(classIndex) &* 7_919)
    return generator.next()
}

extension ResultsRun {
    /// A run as read back from a file.
    init(
        stored name: String, method: String, model: String, dataset: String, created: String, configJSON: String,
        settings: EvaluationSettings, caseIDs: [String], classNames: [String], spacing: [Double],
        metrics: MetricTable, confusion: [Int64], bootstrapSeed: UInt64, bootstrapResamples: Int
    ) {
        (self.name, self.method, self.model, self.dataset, self.created) = (name, method, model, dataset, created)
        (self.configJSON, self.settings, self.caseIDs, self.classNames) = (configJSON, settings, caseIDs, classNames)
        (self.spacing, self.metrics, self.confusion, self.labels) = (spacing, metrics, confusion, [:])
        (self.bootstrapSeed, self.bootstrapResamples) = (bootstrapSeed, bootstrapResamples)
    }
}
