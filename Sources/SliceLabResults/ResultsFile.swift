import Foundation
import ImageFiles
import Metrics
import SliceLabDatasets
import SliceLabIO
import SliceLabSupport

/// The HDF5 results file (the contract in the README): runs under `/runs/<run>`, comparisons under
/// `/comparisons/<runA>__<runB>`. Writing adds to an existing file and keeps everything else in it; the file
/// is replaced atomically, so an error leaves the previous file intact.
public enum ResultsFile {
    /// Column names of `summary/<name>` and `comparisons/…/<name>`, also stored as the `columns` attribute.
    public static let summaryColumns = ["mean", "std", "median", "ci_low", "ci_high", "n_valid"]
    public static let comparisonColumns = ["mean_difference", "ci_low", "ci_high", "wilcoxon_p"]

    /// Adds runs and comparisons to the file at `path` (created when missing).
    ///
    /// - Parameters:
    ///   - overwrite: replace runs (and comparisons) of the same name; otherwise they are refused.
    ///   - shard: for a shard's part (`--shard`), the `/shard` record `slicelab merge` reads.
    ///   - updating: add to an existing file (the default) or replace it whole (`merge`).
    /// - Throws: `ResultsError.runExists` (nothing written), `ImageFileError` from HDF5. Rests on
    ///   `HDF5File.write(to:updating:)`.
    public static func write(
        runs: [ResultsRun], comparisons: [ResultsComparison] = [], to path: String,
        overwrite: Bool = false, shard: ShardRecord? = nil, updating: Bool = true
    ) throws {
        for run in runs { try ResultsRun.validate(name: run.name) }
        try HDF5File.write(to: path, updating: updating) { file in
            /// Clears `group` for a new object of that name, or refuses.
            func claim(_ group: String, _ name: String) throws {
                guard file.exists(group) else { return }
                guard overwrite else { throw ResultsError.runExists(file: path, run: name) }
                try file.remove(group)
            }
            for run in runs {
                try claim("/runs/\(run.name)", run.name)
                try write(run, to: file, at: "/runs/\(run.name)")
            }
            for comparison in comparisons {
                try claim("/comparisons/\(comparison.groupName)", comparison.groupName)
                try write(comparison, to: file, at: "/comparisons/\(comparison.groupName)")
            }
            if let shard {
                if file.exists("/shard") { try file.remove("/shard") }
                try write(shard, to: file)
            }
        }
    }

    /// The names of the runs in the file, sorted.
    public static func runNames(in path: String) throws -> [String] {
        let file = try HDF5File.open(path)
        return file.exists("/runs") ? try file.children(of: "/runs") : []
    }

    /// Reads a run back (labels are not loaded).
    ///
    /// - Throws: `ResultsError.missingRun`, `ImageFileError` for a file not in the contract's layout.
    public static func readRun(_ name: String, from path: String) throws -> ResultsRun {
        let file = try HDF5File.open(path)
        let group = "/runs/\(name)"
        guard file.exists(group) else { throw ResultsError.missingRun(file: path, run: name) }
        func text(_ attribute: String) throws -> String {
            try file.attribute(attribute, at: group).stringValue ?? ""
        }
        let classNames = try file.readStrings("\(group)/class_names")
        // Metrics the file does not hold (written before they existed) are absent; names SliceLab does not know
        // (written by a newer version) are left alone.
        var metrics = MetricTable()
        for metric in MetricName.allCases where file.exists("\(group)/metrics/\(metric.rawValue)") {
            metrics[metric] = try file.read("\(group)/metrics/\(metric.rawValue)", as: Double.self).values
        }
        let settings = EvaluationSettings(
            classCount: classNames.count,
            toleranceMM: file.hasAttribute("nsd_tolerance_mm", at: group)
                ? try file.attribute("nsd_tolerance_mm", at: group).doubleValues?.first ?? 1 : 1,
            hd95: HD95Definition(rawValue: try text("hd95_definition")) ?? .max,
            empty: EmptyRule(rawValue: try text("empty_rule")) ?? .nan,
            lesionClasses: file.hasAttribute("lesion_classes", at: group)
                ? (try file.attribute("lesion_classes", at: group).doubleValues ?? []).map { Int($0) } : [],
            calibrationBins: file.hasAttribute("calibration_bins", at: group)
                ? (try file.attribute("calibration_bins", at: group).doubleValues?.first).map { Int($0) } : nil)
        var seed: UInt64 = 0
        if file.hasAttribute("bootstrap_seed", at: group),
            case .int(let value) = try file.attribute("bootstrap_seed", at: group)
        {
            seed = UInt64(bitPattern: value)
        }
        var resamples = 2000
        if file.hasAttribute("bootstrap_resamples", at: group),
            case .int(let value) = try file.attribute("bootstrap_resamples", at: group)
        {
            resamples = Int(value)
        }
        var run = ResultsRun(
            stored: name, method: try text("method"), model: try text("model"),
            dataset: try text("dataset"), created: try text("created"), configJSON: try text("config"),
            settings: settings, caseIDs: try file.readStrings("\(group)/case_ids"),
            classNames: classNames, spacing: try file.read("\(group)/spacing", as: Double.self).values,
            metrics: metrics, confusion: try file.read("\(group)/confusion", as: Int64.self).values,
            bootstrapSeed: seed, bootstrapResamples: resamples)
        if file.hasAttribute("postprocessing", at: group) { run.postprocessingJSON = try text("postprocessing") }
        return run
    }

    // MARK: - Writing one run

    private static func write(_ run: ResultsRun, to file: HDF5File, at group: String) throws {
        let (cases, classes) = (run.caseCount, run.classCount)
        try file.createGroup(group)
        let attributes: [(String, HDF5AttributeValue)] = [
            ("method", .string(run.method)), ("model", .string(run.model)), ("dataset", .string(run.dataset)),
            ("created", .string(run.created)), ("software_version", .string("slicelab \(sliceLabVersion)")),
            ("config", .string(run.configJSON)), ("hd95_definition", .string(run.settings.hd95.rawValue)),
            ("empty_rule", .string(run.settings.empty.rawValue)),
            ("nsd_tolerance_mm", .double(run.settings.toleranceMM)),
            ("bootstrap_seed", .int(Int64(bitPattern: run.bootstrapSeed))),
            ("bootstrap_resamples", .int(Int64(run.bootstrapResamples)))
        ]
        for (name, value) in attributes { try file.setAttribute(name, value, at: group) }
        if let post = run.postprocessingJSON { try file.setAttribute("postprocessing", .string(post), at: group) }
        if let bins = run.settings.calibrationBins {
            try file.setAttribute("calibration_bins", .int(Int64(bins)), at: group)
        }
        if !run.settings.lesionClasses.isEmpty {
            try file.setAttribute("lesion_classes", .ints(run.settings.lesionClasses.map(Int64.init)), at: group)
        }
        if let split = run.splitJSON { try file.setAttribute("split", .string(split), at: group) }
        try file.writeStrings(run.caseIDs, to: "\(group)/case_ids")
        try file.writeStrings(run.classNames, to: "\(group)/class_names")
        try file.write(run.spacing, shape: [cases, 3], to: "\(group)/spacing")
        try file.write(run.confusion, shape: [cases, classes, classes], to: "\(group)/confusion")
        for metric in run.metrics.metrics {
            try file.write(
                run.metrics[metric] ?? [], shape: [cases, classes], to: "\(group)/metrics/\(metric.rawValue)")
            let summaries = run.summaries(metric)
            let path = "\(group)/summary/\(metric.rawValue)"
            try file.write(summaries.flatMap(\.row), shape: [classes, 6], to: path)
            try file.setAttribute("columns", .strings(summaryColumns), at: path)
            try file.setAttribute("q25", .doubles(summaries.map(\.lowerQuartile)), at: path)
            try file.setAttribute("q75", .doubles(summaries.map(\.upperQuartile)), at: path)
            try file.setAttribute("iqr", .doubles(summaries.map(\.interquartileRange)), at: path)
            try file.setAttribute("n_nan", .ints(summaries.map { Int64($0.nanCount) }), at: path)
            try file.setAttribute("n_inf", .ints(summaries.map { Int64($0.infiniteCount) }), at: path)
            try file.setAttribute("foreground_mean", .double(ResultsRun.foregroundMean(summaries)), at: path)
            try file.setAttribute("std_ddof", .int(Int64(MetricSummary.ddof)), at: path)
        }
        for (caseID, labels) in run.labels.sorted(by: { $0.key < $1.key }) {
            let shape =
                labels.frames == 1 ? [labels.rows, labels.columns] : [labels.frames, labels.rows, labels.columns]
            let chunks = labels.frames == 1 ? shape : [1, labels.rows, labels.columns]
            let path = "\(group)/labels/\(caseID)"
            if (labels.labels.max() ?? 0) <= 255 && (labels.labels.min() ?? 0) >= 0 {
                try file.write(
                    labels.labels.map { UInt8(clamping: $0) }, shape: shape, to: path, chunks: chunks, deflate: 4)
            } else {
                try file.write(
                    labels.labels.map { UInt16(clamping: $0) }, shape: shape, to: path, chunks: chunks, deflate: 4)
            }
            try file.setAttribute("spacing", .doubles(labels.spacing), at: path)
        }
    }

    private static func write(_ comparison: ResultsComparison, to file: HDF5File, at group: String) throws {
        try file.createGroup(group)
        try file.setAttribute("run_a", .string(comparison.runA), at: group)
        try file.setAttribute("run_b", .string(comparison.runB), at: group)
        try file.setAttribute("bootstrap_seed", .int(Int64(bitPattern: comparison.bootstrapSeed)), at: group)
        try file.setAttribute("bootstrap_resamples", .int(Int64(comparison.bootstrapResamples)), at: group)
        try file.setAttribute("class_names", .strings(comparison.classNames), at: group)
        for metric in MetricName.allCases where comparison.rows[metric] != nil {
            let rows = comparison.rows[metric] ?? []
            let path = "\(group)/\(metric.rawValue)"
            try file.write(rows.flatMap(\.row), shape: [rows.count, 4], to: path)
            try file.setAttribute("columns", .strings(comparisonColumns), at: path)
            try file.setAttribute("n_pairs", .ints(rows.map { Int64($0.pairCount) }), at: path)
            try file.setAttribute("wilcoxon_method", .strings(rows.map { $0.wilcoxon.method.rawValue }), at: path)
        }
    }
}
