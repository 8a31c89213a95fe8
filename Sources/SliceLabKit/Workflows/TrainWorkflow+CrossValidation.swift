import DeepLab
import DeepLabTraining
import Distributed
import Foundation
import Metrics
import SliceLabDatasets
import SliceLabIO
import SliceLabInference
import SliceLabResults
import SliceLabSupport

/// `train DATASET --fold all|K --out OUT/`: nnU-Net's cross-validation, one model per fold of an nnU-Net or
/// Decathlon set's split (`splits_final.json`, else the seeded 5-fold split).
extension TrainWorkflow {
    /// What a cross-validation run did.
    public struct FoldsOutcome: Sendable {
        /// Each fold's validation run, in fold order.
        public var runs: [ResultsRun] = []
        /// Once every fold is there: the pooled run `crossval`, written with the folds' runs to `path`
        /// (OUT/crossval.h5).
        public var pooled: (run: ResultsRun, path: String)?
    }

    /// The folder of fold K's model and validation.
    public static func foldFolder(_ output: String, fold: Int) -> URL {
        URL(fileURLWithPath: output).appendingPathComponent("fold_\(fold)")
    }

    /// Trains fold `fold` (every fold when nil) into OUT/fold_K/model.h5 (and model.last.h5), segments the fold's
    /// validation cases with it and scores them into OUT/fold_K/validation.h5 (run `fold_K`). A fold whose model and
    /// validation file exist is kept, not trained again, so folds trained as separate processes or Slurm array tasks
    /// (`--fold $SLURM_ARRAY_TASK_ID`) join when `--fold all` runs after them: with every fold there, OUT/crossval.h5
    /// gets each fold's run and the pooled run `crossval` (every validation case once).
    ///
    /// SliceLab's own layout pools its train and val cases into the seeded split and keeps its test cases held out
    /// (`SplitSelection.crossValidation`).
    ///
    /// - Throws: `DatasetError.invalidDescription` for a fold the split lacks; what training, segmentation and
    ///   evaluation throw.
    public static func runFolds(
        _ options: TrainOptions, fold: Int?, communicator: Communicator = .single, log: (String) -> Void,
        makeNetwork: (TrainOptions) throws -> SegmentationNetwork
    ) throws -> FoldsOutcome {
        var options = options
        options.selection.crossValidation = true
        let probe = try LabeledSet.open(
            options.datasetPath, skipBad: options.skipBad, limits: options.limits, selection: options.selection)
        let foldCount = probe.foldCount ?? 1
        let folds = fold.map { [$0] } ?? Array(0..<foldCount)
        var outcome = FoldsOutcome()
        for k in folds {
            let folder = foldFolder(options.outputPath, fold: k)
            let (model, validation) = (
                folder.appendingPathComponent("model.h5").path, folder.appendingPathComponent("validation.h5").path
            )
            if FileManager.default.fileExists(atPath: model) && FileManager.default.fileExists(atPath: validation) {
                log("train: fold \(k): kept \(model) and \(validation)")
            } else {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                var foldOptions = options
                (foldOptions.outputPath, foldOptions.selection.fold) = (model, k)
                log("train: fold \(k) of \(foldCount) → \(model)")
                try run(foldOptions, communicator: communicator, makeNetwork: makeNetwork)
                if communicator.rank == 0 {
                    let run = try validate(fold: k, options: foldOptions)
                    try ResultsFile.write(runs: [run], to: validation, updating: false)
                    log("train: fold \(k): \(run.caseCount) validation case(s) scored into \(validation)")
                }
            }
            if communicator.rank == 0 { outcome.runs.append(try ResultsFile.readRun("fold_\(k)", from: validation)) }
        }
        guard fold == nil, communicator.rank == 0 else { return outcome }
        let pooled = try ResultsRun.pooled(outcome.runs, name: "crossval")
        let path = URL(fileURLWithPath: options.outputPath).appendingPathComponent("crossval.h5").path
        try ResultsFile.write(runs: outcome.runs + [pooled], to: path, updating: false)
        outcome.pooled = (pooled, path)
        return outcome
    }

    /// Fold `options.selection.fold`'s model (`options.outputPath`) on the fold's validation cases, scored as
    /// `evaluate` scores (lesion classes from the set).
    static func validate(fold: Int, options: TrainOptions) throws -> ResultsRun {
        let validation = try FoldValidation(fold: fold, options: options, keepsProbabilities: false)
        return try validation.run(name: "fold_\(fold)", labels: validation.outputs.labels)
    }

    /// `train --fold all --post auto`: post-processing chosen on every fold's validation cases (each fold's model
    /// segments them once more, keeping its probabilities): each whole-map step, then each class's component
    /// rules, against none, kept where the mean Dice rises with paired Wilcoxon p < 0.05 (`AutoPostProcessing`).
    /// Writes the choice to OUT/postprocessing.json (what `segment --model OUT/ --regularize auto` applies) and
    /// the pooled validation after it to OUT/crossval.h5 as run `crossval.auto`, paired with `crossval`.
    ///
    /// - Returns: the choice file, the choice in words, and the pooled run after it with its comparison.
    public static func choosePostProcessing(_ options: TrainOptions, log: (String) -> Void) throws
        -> (path: String, summary: String, run: ResultsRun, comparison: ResultsComparison)
    {
        var options = options
        options.selection.crossValidation = true
        let probe = try LabeledSet.open(
            options.datasetPath, skipBad: options.skipBad, limits: options.limits, selection: options.selection)
        let folds = try (0..<(probe.foldCount ?? 0)).map { k in
            var foldOptions = options
            (foldOptions.outputPath, foldOptions.selection.fold) = (
                foldFolder(options.outputPath, fold: k).appendingPathComponent("model.h5").path, k
            )
            log("train: --post auto: fold \(k)'s validation cases again, with probabilities")
            return try FoldValidation(fold: k, options: foldOptions, keepsProbabilities: true)
        }
        var outputs = DeepOutputs()
        for fold in folds { outputs.append(fold.outputs) }
        let images = folds.flatMap(\.images)
        let choice = try AutoPostProcessing(
            outputs: outputs, images: images, references: folds.flatMap { $0.samples.map(\.labels.values) },
            classCount: probe.classCount, split: "val of \(folds.count) folds",
            wholeMapCandidates: [.majority, .mrf, .crf], significance: 0.05)
        var offset = 0
        let runs = try folds.map { fold in
            defer { offset += fold.images.count }
            return try fold.run(
                name: "fold_\(fold.fold).auto",
                labels: fold.images.indices.map {
                    try choice.apply(
                        case: offset + $0, outputs: outputs, image: images[offset + $0],
                        classCount: probe.classCount)
                })
        }
        var after = try ResultsRun.pooled(runs, name: "crossval.auto")
        after.postprocessingJSON = choice.json
        let crossval = URL(fileURLWithPath: options.outputPath).appendingPathComponent("crossval.h5").path
        let comparison = try ResultsComparison(
            try ResultsFile.readRun("crossval", from: crossval), after, seed: options.seed)
        try ResultsFile.write(runs: [after], comparisons: [comparison], to: crossval, overwrite: true)
        let path = URL(fileURLWithPath: options.outputPath).appendingPathComponent(AutoPostProcessing.fileName).path
        try writeAtomically(Data(choice.json.utf8), to: path)
        return (path, choice.summary, after, comparison)
    }

    /// `train --fold all --report DIR`: the cross-validation as a report: the pooled run first, then (with `--post
    /// auto`) the pooled run after the chosen post-processing with its paired test, then each fold's run; the
    /// table gives each per class, the box plots their spread.
    public static func crossValidationReport(
        _ outcome: FoldsOutcome, post: (run: ResultsRun, comparison: ResultsComparison)?, dataset: String
    ) -> HTMLReport {
        guard let pooled = outcome.pooled?.run else { preconditionFailure("the report follows every fold") }
        let methods =
            [HTMLReport.Method(pooled, against: nil)]
            + (post.map { [HTMLReport.Method($0.run, against: $0.comparison)] } ?? [])
            + outcome.runs.map { HTMLReport.Method($0, against: nil) }
        var report = HTMLReport(
            title: "SliceLab cross-validation on \(dataset)", classNames: pooled.classNames, caseIDs: pooled.caseIDs,
            methods: methods, pictures: [])
        let folds = outcome.runs.map { "\($0.name): \($0.caseCount) case(s)" }.joined(separator: ", ")
        report.sections.append(
            (
                "Folds",
                "<p>Each fold's model scored on the cases it did not train on (\(folds)); <b>\(pooled.name)</b> "
                    + "pools them, every case once. p-values pair a run with \(pooled.name) on the same cases; "
                    + "folds hold other cases, so they have none.</p>"
            ))
        return report
    }

    /// One fold's model on the fold's validation cases.
    struct FoldValidation {
        let fold: Int
        let options: TrainOptions
        let set: LabeledSet
        let names: [String]
        let samples: [LabeledSample]
        let images: [ScanImage]
        let segmenter: VolumeSegmenter
        let outputs: DeepOutputs

        init(fold: Int, options: TrainOptions, keepsProbabilities: Bool) throws {
            (self.fold, self.options) = (fold, options)
            set = try LabeledSet.open(
                options.datasetPath, skipBad: options.skipBad, limits: options.limits, selection: options.selection)
            let (set, names) = (set, set.cases(in: "val"))
            guard !names.isEmpty else {
                throw DatasetError.emptySplit(split: "val (fold \(fold))")
            }
            self.names = names
            samples = try names.map { try set.load($0) }
            images = samples.map(ScanImage.init)
            segmenter = try VolumeSegmenter.load(checkpoint: options.outputPath)
            outputs = try DeepOutputs.segment(segmenter, images: images, keepsProbabilities: keepsProbabilities)
        }

        /// `labels` (one per validation case) scored as `evaluate` scores them, as run `name`.
        func run(name: String, labels: [[Int32]]) throws -> ResultsRun {
            let settings = EvaluationSettings(
                classCount: set.classCount, lesionClasses: set.description.lesionClassIndices)
            let metrics = try CaseEvaluation.metrics(
                of: zip(labels, samples).map { LabelMap($0, like: $1) },
                references: samples.map { LabelMap($0.labels.values, like: $0) }, caseNames: names,
                settings: settings, remedy: "the set's dataset.json lists fewer classes")
            var run = try ResultsRun(
                name: name, method: "deeplabv3", model: options.outputPath, dataset: set.description.name,
                configJSON: try SortedJSON.string(segmenter.model.configuration), settings: settings,
                classNames: set.description.classes,
                cases: zip(zip(names, samples), metrics).map { ($0.0, $0.1.spacing, $1) })
            run.splitJSON = set.splitJSON
            return run
        }
    }
}
