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
    /// - Throws: `DatasetError.invalidDescription` for a set without folds (SliceLab's own layout has fixed splits)
    ///   or a fold it lacks; what training, segmentation and evaluation throw.
    public static func runFolds(
        _ options: TrainOptions, fold: Int?, communicator: Communicator = .single, log: (String) -> Void,
        makeNetwork: (TrainOptions) throws -> SegmentationNetwork
    ) throws -> FoldsOutcome {
        let probe = try LabeledSet.open(
            options.datasetPath, skipBad: options.skipBad, limits: options.limits, selection: options.selection)
        guard let foldCount = probe.foldCount else {
            throw DatasetError.invalidDescription(
                file: probe.folder.appendingPathComponent("dataset.json").path,
                reason: "--fold: SliceLab's own layout has fixed splits; folds need an nnU-Net or Decathlon set")
        }
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
        let set = try LabeledSet.open(
            options.datasetPath, skipBad: options.skipBad, limits: options.limits, selection: options.selection)
        let names = set.cases(in: "val")
        guard !names.isEmpty else {
            throw DatasetError.emptySplit(split: "val (fold \(fold))")
        }
        let samples = try names.map { try set.load($0) }
        let segmenter = try VolumeSegmenter.load(checkpoint: options.outputPath)
        let outputs = try DeepOutputs.segment(
            segmenter, images: samples.map(ScanImage.init), keepsProbabilities: false)
        let settings = EvaluationSettings(
            classCount: set.classCount, lesionClasses: set.description.lesionClassIndices)
        let metrics = try CaseEvaluation.metrics(
            of: zip(outputs.labels, samples).map { LabelMap($0, like: $1) },
            references: samples.map { LabelMap($0.labels.values, like: $0) }, caseNames: names, settings: settings,
            remedy: "the set's dataset.json lists fewer classes")
        var run = try ResultsRun(
            name: "fold_\(fold)", method: "deeplabv3", model: options.outputPath, dataset: set.description.name,
            configJSON: try SortedJSON.string(segmenter.model.configuration), settings: settings,
            classNames: set.description.classes,
            cases: zip(zip(names, samples), metrics).map { ($0.0, $0.1.spacing, $1) })
        run.splitJSON = set.splitJSON
        return run
    }
}
