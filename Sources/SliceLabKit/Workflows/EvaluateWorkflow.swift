import Foundation
import ImageFiles
import Metrics
import SliceLabDatasets
import SliceLabIO
import SliceLabResults
import SliceLabSupport

/// `slicelab evaluate`: metrics of predicted label maps against references, written as one run of a results
/// file.
public enum EvaluateWorkflow {
    /// The HD95 definitions (`--hd95 max|pooled`), re-exported for the executable.
    public typealias HD95Definition = Metrics.HD95Definition
    /// The empty-mask rules (`--empty nan|one`), re-exported for the executable.
    public typealias EmptyRule = Metrics.EmptyRule

    /// What `evaluate` was asked to do (`EvaluateOptions`, recorded in the results file).
    public typealias Options = EvaluateOptions

    /// Evaluates every case, writes the run into `options.output` and returns it.
    ///
    /// Nothing is written when any case fails: the file is replaced atomically at the end. Label files are read
    /// with `limits` (`--max-memory`).
    /// - Throws: `DatasetError` (unpaired files, shapes, options), `MetricsError.inCase` (labels ≥ K),
    ///   `ResultsError.runExists`, `InputError`/`ImageFileError` naming the file.
    public static func run(
        _ options: Options, limits: ReadLimits = .standard,
        showProgress: Bool = true
    ) throws -> ResultsRun {
        let runName = options.resolvedRunName
        try ResultsRun.validate(name: runName)
        try prepareOutputLocation(options.output)
        if !options.overwrite, FileManager.default.fileExists(atPath: options.output),
            try ResultsFile.runNames(in: options.output).contains(runName)
        {
            throw ResultsError.runExists(file: options.output, run: runName)
        }
        if options.shard != nil, !options.overwrite, FileManager.default.fileExists(atPath: options.output) {
            throw DatasetError.outputExists(file: options.output)
        }
        let fallbackSpacing = try resolvedSpacing(options.spacing)
        let allPairs = try EvaluateInputs.pairs(prediction: options.prediction, reference: options.reference)
        var options = options
        let dataset = try EvaluateInputs.datasetLabels(options.reference)
        if options.classNames == nil, options.classCount == nil, let dataset {
            options.classNames = dataset.classNames  // an nnU-Net or Decathlon set names its classes
        }
        let classCount = try resolveClassCount(options, allPairs, limits: limits)
        var pairs = allPairs
        if let shard = options.shard {
            let sizes = allPairs.map { ShardSplit.diskSize($0.reference) + ShardSplit.diskSize($0.prediction) }
            pairs = try ShardSplit.indices(of: shard, sizes: sizes).map { allPairs[$0] }
        }
        let classNames = options.classNames ?? (0..<classCount).map { $0 == 0 ? "background" : "class_\($0)" }
        let settings = EvaluationSettings(
            classCount: classCount, toleranceMM: options.toleranceMM,
            hd95: options.hd95, empty: options.empty,
            lesionClasses: try LesionClasses.resolve(
                options.lesionClasses ?? dataset?.lesionClasses ?? [], classNames: classNames),
            calibrationBins: options.probabilities == nil ? nil : 15)
        let labelReading = try options.labelReading()
        let progress = showProgress ? ProgressReporter("evaluate", total: pairs.count) : nil
        var cases: [(id: String, spacing: [Double], metrics: CaseMetrics)] = []
        for pair in pairs {
            let reference = try LoadedLabels.read(pair.reference, limits: limits, options: labelReading)
            let prediction = try LoadedLabels.read(pair.prediction, limits: limits, options: labelReading)
            let (r, p) = (reference.labels, prediction.labels)
            let spacing = reference.hasSpacing ? r.spacing : prediction.hasSpacing ? p.spacing : fallbackSpacing
            let probabilities = try options.probabilities.map {
                try EvaluateInputs.probabilities(
                    $0, case: pair.id, frames: p.frames, classCount: classCount, rows: p.rows, columns: p.columns,
                    limits: limits)
            }
            let metrics = try CaseEvaluation.metrics(
                caseID: pair.id, reference: r, prediction: p, spacing: spacing,
                settings: settings, remedy: "pass a larger --num-classes", probabilities: probabilities)
            cases.append((pair.id, spacing, metrics))
            progress?.advance(status: pair.id)
        }
        let config = try SortedJSON.string(options)
        let run = try ResultsRun(
            name: runName, method: "labels", model: "", dataset: options.reference,
            configJSON: config, settings: settings, classNames: classNames, cases: cases,
            bootstrapSeed: options.bootstrapSeed, bootstrapResamples: options.bootstrapResamples)
        if let shard = options.shard {
            var shared = options
            (shared.output, shared.shard, shared.overwrite) = ("", nil, false)
            let record = ShardRecord(
                command: "evaluate", shard: shard,
                configJSON: try SortedJSON.string(shared),
                caseOrder: allPairs.map(\.id), cases: pairs.map(\.id), skipped: [],
                runOrder: [runName], comparisons: [])
            try ResultsFile.write(runs: [run], to: options.output, overwrite: true, shard: record, updating: false)
        } else {
            try ResultsFile.write(runs: [run], to: options.output, overwrite: options.overwrite)
        }
        return run
    }

    /// Spacing for files without their own: three values (slice, row, column), two (row, column), or 1 mm.
    static func resolvedSpacing(_ given: [Double]?) throws -> [Double] {
        guard let given else { return [1, 1, 1] }
        guard (2...3).contains(given.count), given.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw DatasetError.invalidOption(
                "--spacing \(given.map { String($0) }.joined(separator: ",")): "
                    + "need three positive values z,y,x in mm (or two, y,x)")
        }
        return given.count == 3 ? given : [1] + given
    }

    /// K from `--num-classes`, else the number of class names, else the largest label in any file + 1 (≥ 2).
    static func resolveClassCount(
        _ options: Options, _ pairs: [EvaluateInputs.CasePair],
        limits: ReadLimits = .standard
    ) throws -> Int {
        if let names = options.classNames, let count = options.classCount, names.count != count {
            throw DatasetError.invalidOption("--class-names lists \(names.count) names but --num-classes is \(count)")
        }
        let count: Int
        if let given = options.classCount ?? options.classNames?.count {
            count = given
        } else {
            var largest = 1
            for pair in pairs {
                for path in [pair.reference, pair.prediction] {
                    largest = max(largest, Int(try LoadedLabels.read(path, limits: limits).labels.labels.max() ?? 0))
                }
            }
            count = largest + 1
        }
        guard (2...ConfusionMatrix.maximumClassCount).contains(count) else {
            throw DatasetError.invalidOption(
                "\(count) classes: evaluate supports 2...\(ConfusionMatrix.maximumClassCount)")
        }
        return count
    }

    /// A 2-D grid for one frame (slice thickness only in the voxel volume), 3-D otherwise.
    // MARK: - The printed table

}
