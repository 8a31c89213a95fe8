import Classical
import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import Metrics
import SliceLabDatasets
import SliceLabIO
import SliceLabInference
import SliceLabResults
import SliceLabSupport

/// `slicelab compare`: DeepLabV3 and classical configurations on the same cases of a labeled set, each
/// evaluated into one results file (a run each, plus the paired comparisons of DeepLabV3 against each), a
/// side-by-side table and an optional HTML report.
public enum CompareWorkflow {
    public struct Options: Sendable {
        public var dataset: String
        public var model: String
        public var classical: [ClassicalSpec]
        public var split: String
        public var output: String
        public var report: String?
        public var threads: Int?
        public var skipBad: Bool
        /// Cases used to learn the `train-vote` mapping, evenly spaced over the training split.
        public var voteCases: Int
        public var overwrite: Bool
        /// Prepended to every run name (the demo puts two sets into one file).
        public var runPrefix: String
        /// A folder for overlay PNGs `<case>_<run>.png` (middle frame), or nil.
        public var overlays: String?
        /// The bound on decoded sizes the set's files are read with (`--max-memory`).
        public var limits: ReadLimits = .standard
        /// Post-processing of the model's output, each an extra run `<run>.<post>` (`none` is the plain run,
        /// always present); `auto` chooses the component rules per class on the validation split (the train
        /// split when the set has no validation cases).
        public var post: [ComparePost] = []
        /// The dense CRF's parameters for `--post crf`.
        public var crf = SegmentPostProcessing.CRFParameters()
        /// The fold and split seed for nnU-Net and Decathlon sets (`--fold`, `--split-seed`).
        public var selection = SplitSelection()
        /// A folder for each run's label volumes, `<folder>/<run>/<case><file ending>` in the set's own format
        /// (`--predictions`), or nil.
        public var predictions: String?
        /// Runs from another tool's label files, `<folder>/<case><file ending>` (`--external NAME=FOLDER`).
        public var external: [(name: String, folder: String)] = []
        /// Run only this shard of the split's cases (`--shard I/N`) and write a part for `slicelab merge`
        /// (no comparisons, report or overlays: they need every case).
        public var shard: Shard?
        /// `--precision`: bf16 runs the model's convolutions in bf16; nil runs the checkpoint's own precision.
        public var precision: Precision?
        /// `--lesion-classes` (names or label values) scored lesion by lesion too; nil takes the set's own
        /// `lesion_classes`.
        public var lesionClasses: [String]?
        /// Further checkpoints (`--model` given again) whose softmax is averaged with `model`'s.
        public var ensemble: [String] = []
        /// `--tta`; nil takes the segmenter's `defaultAugmentation`.
        public var augmentation: TestTimeAugmentation?
        /// `--tta` given again: the same models with each of these too, as run `deeplabv3.tta-<name>`.
        public var moreAugmentations: [TestTimeAugmentation] = []
        /// `--members`: with an ensemble, each member alone (no augmentation) too, as run `deeplabv3.<fold_K>`.
        public var members = false

        public init(
            dataset: String, model: String, classical: [ClassicalSpec], split: String = "test", output: String,
            report: String? = nil, threads: Int? = nil, skipBad: Bool = false, voteCases: Int = 16,
            overwrite: Bool = false, runPrefix: String = "", overlays: String? = nil
        ) {
            (self.dataset, self.model, self.classical, self.split, self.output) = (
                dataset, model, classical, split, output
            )
            (self.report, self.threads, self.skipBad, self.voteCases, self.overwrite) = (
                report, threads, skipBad,
                voteCases, overwrite
            )
            (self.runPrefix, self.overlays) = (runPrefix, overlays)
        }
    }

    /// What a comparison produced.
    public struct Outcome {
        public var runs: [ResultsRun]
        public var comparisons: [ResultsComparison]
        public var skipped: [SkippedCase]
        /// Seconds per stage: load, deeplab, each classical run, evaluate, write.
        public var timings: [(stage: String, seconds: Double)]
        /// What the model's run should be read with: views left out of the test-time augmentation, and the forward
        /// passes a slice costs when more than one.
        public var notes: [String] = []
    }

    /// The default classical configurations when none is given: k-means and multi-Otsu on intensity.
    public static let defaultClassical = ["kmeans:space=gray,map=train-vote", "multiotsu:space=gray,map=train-vote"]

    /// Runs the comparison and writes the results file (and the report).
    ///
    /// - Throws: `DatasetError` naming a bad case, `CompareError`, and the errors of the model, the
    ///   classical methods and the results writer. Nothing is written unless every run completed.
    public static func run(_ options: Options, log: (String) -> Void = { _ in }) throws -> Outcome {
        try checkOutputs(options)
        let clock = StageClock()
        if let threads = options.threads { setComputeThreads(threads) }
        let cases = try load(options, clock: clock)
        let lesionClasses = try LesionClasses.resolve(
            options.lesionClasses ?? cases.set.description.lesionClasses ?? [],
            classNames: cases.set.description.classes)
        let settings = EvaluationSettings(classCount: cases.set.classCount, lesionClasses: lesionClasses)
        let variants = try deepVariants(cases, options: options)
        let progress = ProgressReporter(
            "compare", total: cases.samples.count * (variants.count + options.classical.count))
        let deep = try deepPredictions(
            cases, variants: variants, options: options, settings: settings, clock: clock, progress: progress)
        var predictions = deep.predictions
        for spec in options.classical {
            predictions.append(
                try classicalPrediction(spec, cases: cases, options: options, clock: clock, progress: progress))
        }
        for ((name, folder), maps) in zip(options.external, cases.externalMaps) {
            predictions.append(
                Prediction(
                    name: options.runPrefix + name, method: "external", model: folder,
                    config: DatasetLayouts.jsonText(["folder": folder]), maps: maps))
        }
        let names = predictions.map(\.name)
        if let duplicate = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
            throw CompareError.duplicateRun(name: duplicate)
        }
        let runs = try clock.timed("evaluate") {
            try evaluate(predictions, cases: cases, settings: settings)
        }
        return try write(runs, predictions: predictions, deep: deep, cases: cases, options: options, clock: clock)
    }

    // MARK: - Stages

    /// The cases of one comparison, loaded once for every stage.
    struct Cases {
        let set: LabeledSet
        /// The split's cases (every shard's), and those this process compares.
        let allNames: [String]
        let names: [String]
        let samples: [LabeledSample]
        let images: [ScanImage]
        let references: [LabelMap]
        let segmenter: VolumeSegmenter
        /// `--external` runs' label maps, in `options.external` order.
        let externalMaps: [[LabelMap]]
        /// `Outcome.notes`.
        let notes: [String]
    }

    /// One run's label maps, before evaluation.
    struct Prediction {
        var name: String
        var method: String
        var model: String
        var config: String
        var maps: [LabelMap]
        var postprocessingJSON: String? = nil
        /// Metrics made while the model's probabilities were at hand (with the calibration metrics), and the
        /// settings they were made with; nil to evaluate the maps.
        var evaluated: (settings: EvaluationSettings, metrics: [CaseMetrics])? = nil
    }

    /// One model configuration compare runs: the main run (`--model`, an ensemble when given again, `--tta`), each
    /// further `--tta` on it, and with `--members` each member alone without augmentation.
    struct DeepVariant {
        var suffix: String
        var segmenter: VolumeSegmenter
        var model: String
    }

    /// The model runs' predictions, and what the report shows of their probabilities: each run's reliability
    /// bins, and the main run's predictive entropy per case (0…255 of log K; empty for a 2-D case).
    struct DeepRuns {
        var predictions: [Prediction] = []
        var reliability: [(run: String, bins: ReliabilityBins)] = []
        var entropy: [[UInt8]] = []
    }

    /// Seconds per named stage, summed over the stage's calls, in the order stages first ran.
    final class StageClock {
        private(set) var timings: [(stage: String, seconds: Double)] = []

        func timed<T>(_ stage: String, _ body: () throws -> T) rethrows -> T {
            let start = Date()
            defer {
                let seconds = Date().timeIntervalSince(start)
                if let index = timings.firstIndex(where: { $0.stage == stage }) {
                    timings[index].seconds += seconds
                } else {
                    timings.append((stage, seconds))
                }
            }
            return try body()
        }
    }

    /// Refuses outputs a shard cannot write, and prepares every output folder.
    static func checkOutputs(_ options: Options) throws {
        try prepareOutputLocation(options.output)
        if options.shard != nil {
            if options.report != nil { throw DatasetError.notShardable(option: "--report", command: "compare") }
            if options.overlays != nil { throw DatasetError.notShardable(option: "overlays", command: "compare") }
            if options.predictions != nil {
                throw DatasetError.notShardable(option: "--predictions", command: "compare")
            }
            if !options.overwrite, FileManager.default.fileExists(atPath: options.output) {
                throw DatasetError.outputExists(file: options.output)
            }
        }
        for folder in [options.report, options.overlays, options.predictions].compactMap({ $0 }) {
            try prepareOutputLocation(folder, isFolder: true)
        }
    }

    /// The set, this process's cases of the split, the model, and the `--external` runs (read first, so a
    /// missing or misshapen file fails before the model runs).
    static func load(_ options: Options, clock: StageClock) throws -> Cases {
        let set = try clock.timed("load") {
            try LabeledSet.open(
                options.dataset, skipBad: options.skipBad, limits: options.limits, selection: options.selection)
        }
        let allNames = set.cases(in: options.split)
        guard !allNames.isEmpty else {
            throw CompareError.emptySplit(
                dataset: options.dataset, split: options.split, available: set.splits.keys.sorted())
        }
        for spec in options.classical { try checkClassical(spec, set: set) }
        var names = allNames
        if let shard = options.shard {
            let sizes = allNames.map { name in
                set.files[name].map { files in
                    files.images.map { ShardSplit.diskSize($0.path) }.reduce(0, +)
                        + ShardSplit.diskSize(files.labels.path)
                } ?? 0
            }
            names = try ShardSplit.indices(of: shard, sizes: sizes).map { allNames[$0] }
        }
        var segmenter = try clock.timed("load") {
            try VolumeSegmenter.load(
                checkpoints: [options.model] + options.ensemble, limits: options.limits, precision: options.precision)
        }
        guard segmenter.classCount == set.classCount else {
            throw DatasetError.classCountMismatch(
                model: options.model, modelClasses: segmenter.classCount,
                dataset: options.dataset, datasetClasses: set.classCount)
        }
        let samples = try clock.timed("load") { try names.map { try set.load($0) } }
        var notes = segmenter.augment(options.augmentation ?? segmenter.defaultAugmentation)
        if segmenter.passesPerSlice > 1 { notes.append("deeplabv3: " + segmenter.passesDescription) }
        let references = samples.map { LabelMap($0.labels.values, like: $0) }
        let externalMaps = try clock.timed("load") {
            try options.external.map {
                try externalPredictions(
                    run: $0.name, folder: $0.folder, caseNames: names, references: references, set: set)
            }
        }
        return Cases(
            set: set, allNames: allNames, names: names, samples: samples, images: samples.map(ScanImage.init),
            references: references, segmenter: segmenter, externalMaps: externalMaps, notes: notes)
    }

    /// The main run, each further `--tta` on it, and with `--members` each member of the ensemble alone.
    static func deepVariants(_ cases: Cases, options: Options) throws -> [DeepVariant] {
        let models = [options.model] + options.ensemble
        var variants = [DeepVariant(suffix: "", segmenter: cases.segmenter, model: models.joined(separator: ","))]
        for augmentation in options.moreAugmentations {
            var segmenter = cases.segmenter
            _ = segmenter.augment(augmentation)
            variants.append(DeepVariant(suffix: ".tta-\(augmentation)", segmenter: segmenter, model: variants[0].model))
        }
        guard options.members, models.count > 1 else { return variants }
        for model in models {
            var segmenter = try VolumeSegmenter.load(
                checkpoints: [model], limits: options.limits, precision: options.precision)
            _ = segmenter.augment(.none)
            variants.append(DeepVariant(suffix: "." + memberName(model), segmenter: segmenter, model: model))
        }
        return variants
    }

    /// A member's run name: its fold folder (`fold_K` of OUT/fold_K/model.h5), else its file name without the
    /// extension.
    static func memberName(_ path: String) -> String {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().lastPathComponent
        return folder.hasPrefix("fold_") ? folder : url.deletingPathExtension().lastPathComponent
    }

    /// DeepLabV3 case by case (oneDNN uses every core for one case), each variant; the main run's output then
    /// through each `--post` choice. Every model run is scored while its probabilities are at hand, with the
    /// calibration metrics (15 bins), so no run's probabilities outlive its case unless post-processing needs them.
    static func deepPredictions(
        _ cases: Cases, variants: [DeepVariant], options: Options, settings: EvaluationSettings, clock: StageClock,
        progress: ProgressReporter
    ) throws -> DeepRuns {
        let posts = options.post.filter { $0 != .steps(.none) }
        let config = try modelConfigurationJSON(cases.segmenter, options: options)
        var calibrated = settings
        calibrated.calibrationBins = 15
        var deep = DeepRuns()
        var outputs = DeepOutputs()
        for (index, variant) in variants.enumerated() {
            let name = "deeplabv3" + variant.suffix
            var (bins, metrics) = (ReliabilityBins(classCount: cases.set.classCount), [CaseMetrics]())
            let made = try clock.timed("segment \(name)") {
                try DeepOutputs.segment(
                    variant.segmenter, images: cases.images, keepsProbabilities: index == 0 && !posts.isEmpty,
                    inspect: { i, labels, probabilities in
                        let (image, reference) = (cases.images[i], cases.references[i])
                        bins.add(probabilities: probabilities, reference: reference.labels, frames: image.frames)
                        metrics.append(
                            try CaseEvaluation.metrics(
                                caseID: cases.names[i], reference: reference,
                                prediction: LabelMap(labels, like: cases.samples[i]), spacing: reference.spacing,
                                settings: calibrated, remedy: "the set's dataset.json lists fewer classes",
                                probabilities: probabilities))
                        if index == 0 && options.report != nil {
                            deep.entropy.append(image.frames > 1 ? entropyLevels(probabilities, image: image) : [])
                        }
                    }
                ) { progress.advance(status: "\(name) \(cases.samples[$0].name)") }
            }
            if index == 0 { outputs = made }
            var prediction = Prediction(
                name: options.runPrefix + name, method: "deeplabv3", model: variant.model, config: config,
                maps: zip(made.labels, cases.samples).map { LabelMap($0, like: $1) })
            prediction.evaluated = (calibrated, metrics)
            deep.predictions.append(prediction)
            deep.reliability.append((prediction.name, bins))
        }
        let plain = deep.predictions[0]
        let postRuns = try posts.map { post in
            var run = Prediction(
                name: plain.name + ".\(post)", method: plain.method, model: plain.model, config: plain.config,
                maps: plain.maps)
            let maps: [[Int32]] = try clock.timed("post-process \(post)") {
                switch post {
                case .steps(let pipeline):
                    let settings = SegmentPostProcessing(pipeline: pipeline, crf: options.crf)
                    run.postprocessingJSON = try SortedJSON.string(
                        PostProcessingRecord(
                            method: "\(pipeline)", crf: pipeline.contains(.crf) ? options.crf.spec : nil))
                    return try cases.images.indices.map {
                        try outputs.apply(
                            settings, case: $0, image: cases.images[$0], classCount: cases.set.classCount)
                    }
                case .auto:
                    let choice = try chooseAuto(set: cases.set, segmenter: cases.segmenter, options: options)
                    run.postprocessingJSON = choice.json
                    return try cases.images.indices.map {
                        try choice.apply(
                            case: $0, outputs: outputs, image: cases.images[$0], classCount: cases.set.classCount)
                    }
                }
            }
            run.maps = zip(maps, cases.samples).map { LabelMap($0, like: $1) }
            return run
        }
        deep.predictions.insert(contentsOf: postRuns, at: 1)
        return deep
    }

    /// A volume's predictive entropy (natural log) per voxel, as 0…255 of its maximum log K.
    static func entropyLevels(_ probabilities: [Float], image: ScanImage) -> [UInt8] {
        let (k, plane) = (probabilities.count / max(1, image.frames * image.pixelsPerFrame), image.pixelsPerFrame)
        let scale: Float = 255 / logf(Float(max(k, 2)))
        var levels: [UInt8] = []
        levels.reserveCapacity(image.frames * plane)
        for frame in 0..<image.frames {
            let planes = Array(probabilities[frame * k * plane..<(frame + 1) * k * plane])
            for entropy in Uncertainty.entropy(planes, classCount: k) {
                levels.append(UInt8(max(0, min(255, (entropy * scale).rounded()))))
            }
        }
        return levels
    }

    /// One classical configuration, cases in parallel.
    static func classicalPrediction(
        _ spec: ClassicalSpec, cases: Cases, options: Options, clock: StageClock, progress: ProgressReporter
    ) throws -> Prediction {
        let maps = try clock.timed("segment \(spec.runName)") {
            try classicalPredictions(
                spec, set: cases.set, samples: cases.samples, images: cases.images, options: options,
                progress: progress)
        }
        return Prediction(
            name: options.runPrefix + spec.runName, method: spec.method.rawValue, model: spec.text,
            config: try classicalConfigJSON(spec, cases.set), maps: maps)
    }

    /// Every prediction as a run of per-case metrics on the references' grids.
    static func evaluate(_ predictions: [Prediction], cases: Cases, settings: EvaluationSettings) throws
        -> [ResultsRun]
    {
        try predictions.map { prediction in
            var (settings, metrics) = (settings, [CaseMetrics]())
            if let evaluated = prediction.evaluated {
                (settings, metrics) = evaluated
            } else {
                metrics = try CaseEvaluation.metrics(
                    of: prediction.maps, references: cases.references, caseNames: cases.names, settings: settings,
                    remedy: "the set's dataset.json lists fewer classes")
            }
            var run = try ResultsRun(
                name: prediction.name, method: prediction.method, model: prediction.model,
                dataset: cases.set.description.name, configJSON: prediction.config,
                settings: settings, classNames: cases.set.description.classes,
                cases: zip(zip(cases.names, cases.samples), metrics).map { ($0.0, $0.1.spacing, $1) },
                labels: Dictionary(uniqueKeysWithValues: zip(cases.names, prediction.maps)))
            run.postprocessingJSON = prediction.postprocessingJSON
            run.splitJSON = cases.set.splitJSON
            return run
        }
    }

    /// The results file (a shard's part, or the runs with their comparisons to the first), and the overlays,
    /// label files and report asked for.
    static func write(
        _ runs: [ResultsRun], predictions: [Prediction], deep: DeepRuns, cases: Cases, options: Options,
        clock: StageClock
    ) throws -> Outcome {
        let pairs = runs.dropFirst().map { (a: runs[0].name, b: $0.name) }
        if let shard = options.shard {
            let record = ShardRecord(
                command: "compare", shard: shard, configJSON: try shardConfigJSON(options),
                caseOrder: cases.allNames, cases: cases.names,
                skipped: cases.set.skipped.map { ($0.name, "\($0.error)") },
                runOrder: runs.map(\.name), comparisons: pairs)
            try clock.timed("write") {
                try ResultsFile.write(runs: runs, to: options.output, overwrite: true, shard: record, updating: false)
            }
            return Outcome(
                runs: runs, comparisons: [], skipped: cases.set.skipped, timings: clock.timings, notes: cases.notes)
        }
        let comparisons = try clock.timed("evaluate") {
            try runs.dropFirst().map { try ResultsComparison(runs[0], $0) }
        }
        let (names, maps) = (predictions.map(\.name), predictions.map(\.maps))
        try clock.timed("write") {
            try ResultsFile.write(
                runs: runs, comparisons: comparisons, to: options.output, overwrite: options.overwrite)
            if let folder = options.overlays {
                try writeOverlays(
                    to: folder, names: names, maps: maps, images: cases.images, references: cases.references,
                    caseNames: cases.names)
            }
            if let folder = options.predictions {
                try writePredictions(to: folder, names: names, maps: maps, samples: cases.samples, set: cases.set)
            }
            if let folder = options.report {
                var report = try report(
                    runs: runs, comparisons: comparisons, images: cases.images, references: cases.references,
                    predictions: maps, set: cases.set,
                    uncertainty: (name: "entropy of \(deep.predictions[0].name)", values: deep.entropy))
                report.reliability = deep.reliability
                try report.write(to: folder)
            }
        }
        return Outcome(
            runs: runs, comparisons: comparisons, skipped: cases.set.skipped, timings: clock.timings,
            notes: cases.notes)
    }

    // MARK: - Pieces

    /// The label maps of `--external NAME=FOLDER`: `<case><file ending>` for every case of the split (any format
    /// SliceLab reads, found by the case name), on each reference's grid.
    ///
    /// - Throws: `CompareError.externalMissing` listing every case without a file, `.externalShape`, and the
    ///   readers' errors naming the file.
    static func externalPredictions(
        run: String, folder: String, caseNames: [String], references: [LabelMap],
        set: LabeledSet
    ) throws -> [LabelMap] {
        let found: [(stem: String, url: URL)]
        do { found = try ImageFormats.files(in: URL(fileURLWithPath: folder)) } catch {
            throw InputError.unsupportedFile(file: folder, reason: "cannot list it: \(error.localizedDescription)")
        }
        var byCase: [String: URL] = [:]
        for (stem, url) in found where byCase[stem] == nil || url.lastPathComponent == stem + (set.fileEnding ?? "") {
            byCase[stem] = url
        }
        let missing = caseNames.filter { byCase[$0] == nil }
        guard missing.isEmpty else { throw CompareError.externalMissing(run: run, folder: folder, cases: missing) }
        return try zip(caseNames, references).map { name, reference in
            let path = byCase[name]!.path
            let options = LabelReadingOptions(
                mapping: StructureMapping(rule: .classNames(set.description.classes)),
                reference: set.files[name]?.images.first?.path)
            var map = try LoadedLabels.read(path, limits: set.limits, options: options).labels
            let (shape, expected) = (map.dimensions, reference.dimensions)
            guard shape == expected else {
                throw CompareError.externalShape(run: run, file: path, shape: shape, reference: expected)
            }
            map.spacing = reference.spacing
            return map
        }
    }

    /// Writes `<folder>/<run>/<case><ending>` for every run and case, the folder as a whole: NIfTI with the case's
    /// geometry for NIfTI sets, PNG for 2-D PNG sets, else HDF5 `/labels` (a DICOM SEG needs its source series).
    static func writePredictions(
        to folder: String, names: [String], maps: [[LabelMap]], samples: [LabeledSample],
        set: LabeledSet
    ) throws {
        try writeFolderAtomically(to: folder) { temporary in
            for (name, runMaps) in zip(names, maps) {
                try FileManager.default.createDirectory(
                    atPath: "\(temporary)/\(name)",
                    withIntermediateDirectories: true)
                for (map, sample) in zip(runMaps, samples) {
                    let ending = predictionEnding(set, sample.name)
                    let path = "\(temporary)/\(name)/\(sample.name)\(ending)"
                    if ending.hasPrefix(".nii") {
                        let geometry =
                            sample.geometry
                            ?? VolumeGeometry(
                                spacing: sample.spacing, origin: [0, 0, 0],
                                direction: VolumeGeometry.identity.direction)
                        try NIfTIImage.write(
                            .labels(map.labels), dimensions: [map.columns, map.rows, map.frames],
                            geometry: geometry, to: path)
                    } else {
                        try map.write(to: path, elementType: map.labels.max() ?? 0 > 255 ? .uint16 : .uint8)
                    }
                }
            }
        }
    }

    /// The ending of a case's written labels: the set's file ending, else its label file's (".h5" for DICOM SEG
    /// and multi-frame PNG-less cases).
    static func predictionEnding(_ set: LabeledSet, _ name: String) -> String {
        let ending =
            set.fileEnding
            ?? set.files[name].flatMap { ImageFormats.knownEnding($0.labels.lastPathComponent) }
        switch ending?.lowercased() {
        case ".nii.gz"?, ".nii"?, ".png"?: return ending!.lowercased()
        default: return ".h5"
        }
    }

    /// The options every shard of a run shares, as JSON (`/shard` `config`): not the output, threads or shard.
    static func shardConfigJSON(_ options: Options) throws -> String {
        try SortedJSON.string(
            ShardConfiguration(
                dataset: options.dataset, model: options.model, classical: options.classical.map(\.text),
                split: options.split, skip_bad: options.skipBad, vote_cases: options.voteCases,
                run_prefix: options.runPrefix, post: options.post.map { "\($0)" }, crf: options.crf.spec,
                fold: options.selection.fold, split_seed: options.selection.seed,
                external: options.external.map { "\($0.name)=\($0.folder)" },
                tta: [options.augmentation.map { "\($0)" } ?? "default"] + options.moreAugmentations.map { "\($0)" },
                members: options.members))
    }

    /// The `/shard` `config` of a compare run (snake-case keys, as results files name them).
    private struct ShardConfiguration: Encodable {
        let dataset, model: String, classical: [String], split: String, skip_bad: Bool, vote_cases: Int
        let run_prefix: String, post: [String], crf: String, fold: Int, split_seed: UInt64, external: [String]
        let tta: [String], members: Bool
    }

    /// A deep run's `postprocessing` attribute for one step (the CRF's settings with it).
    private struct PostProcessingRecord: Encodable {
        let method: String
        let crf: String?
    }

    /// `--post auto`: the component rules chosen per class on the validation split (else the train split).
    static func chooseAuto(
        set: LabeledSet, segmenter: VolumeSegmenter,
        options: Options
    ) throws -> AutoPostProcessing {
        let split = set.cases(in: "val").isEmpty ? "train" : "val"
        let names = set.cases(in: split)
        guard !names.isEmpty else {
            throw CompareError.emptySplit(dataset: options.dataset, split: "val", available: set.splits.keys.sorted())
        }
        let samples = try names.map { try set.load($0) }
        let images = samples.map(ScanImage.init)
        let outputs = try DeepOutputs.segment(segmenter, images: images)
        return try AutoPostProcessing(
            outputs: outputs, images: images,
            references: samples.map(\.labels.values),
            classCount: set.classCount, split: split)
    }

    /// A classical configuration's errors that need no image (its method's class count, its mapping's), found
    /// before the model runs on every case.
    ///
    /// - Throws: `CompareError.invalidMapping` naming the spec, or the method's `InferenceError`.
    static func checkClassical(_ spec: ClassicalSpec, set: LabeledSet) throws {
        let options = spec.options(classCount: set.classCount)
        let clusterCount = options.classes
        if spec.mapping == .intensity && clusterCount != set.classCount {
            throw CompareError.invalidMapping(
                spec: spec.text,
                reason: "map=intensity needs classes=\(set.classCount) (the set's class count), not \(clusterCount)")
        }
        try ClassicalSegmentation.check(options)
    }

    /// Clusters every case and maps clusters to the set's classes as the spec says.
    static func classicalPredictions(
        _ spec: ClassicalSpec, set: LabeledSet, samples: [LabeledSample],
        images: [ScanImage], options: Options,
        progress: ProgressReporter
    ) throws -> [LabelMap] {
        var clusterOptions = spec.options(classCount: set.classCount)
        clusterOptions.showsProgress = false
        let clusterCount = clusterOptions.classes
        let mapping =
            spec.mapping == .trainVote
            ? try trainVote(spec, clusterOptions, set: set, count: options.voteCases) : nil
        return try Parallel.map(images.count) { index in
            let clusters = try ClassicalSegmentation.cluster(images[index], options: clusterOptions).labels
            let classes: [Int32]
            switch spec.mapping {
            case .intensity: classes = clusters
            case .trainVote: classes = try mapping!.apply(clusters)
            case .oracle:
                classes = try ClassMapping.hungarianOracle(
                    clusters: clusters, truth: samples[index].labels.values,
                    clusterCount: clusterCount,
                    classCount: set.classCount
                ).apply(clusters)
            }
            progress.advance(status: "\(spec.runName) \(samples[index].name)")
            return LabelMap(classes, like: samples[index])
        }
    }

    /// The majority-vote mapping from clusters to classes learned on up to `count` training cases.
    static func trainVote(
        _ spec: ClassicalSpec, _ clusterOptions: ClusterOptions, set: LabeledSet,
        count: Int
    ) throws -> ClassMapping {
        let training = set.cases(in: "train")
        guard !training.isEmpty else {
            throw CompareError.invalidMapping(
                spec: spec.text,
                reason: "map=train-vote needs a 'train' split in "
                    + "\(set.folder.path)/dataset.json")
        }
        let stride = max(1, training.count / max(1, count))
        let chosen = Swift.stride(from: 0, to: training.count, by: stride).prefix(count).map { training[$0] }
        let pairs = try Parallel.map(chosen.count) { index in
            let sample = try set.load(chosen[index])
            let clusters = try ClassicalSegmentation.cluster(ScanImage(sample), options: clusterOptions).labels
            return (clusters, sample.labels.values)
        }
        return try ClassMapping.majorityVote(
            clusters: pairs.flatMap(\.0), truth: pairs.flatMap(\.1),
            clusterCount: clusterOptions.classes, classCount: set.classCount)
    }

    static func classicalConfigJSON(_ spec: ClassicalSpec, _ set: LabeledSet) throws -> String {
        try SortedJSON.string(
            ClassicalConfiguration(
                spec: spec.text, method: spec.method.rawValue, space: spec.space.rawValue,
                clusters: spec.options(classCount: set.classCount).classes, map: spec.mapping.rawValue,
                oracle: spec.mapping == .oracle, seed: spec.seed, n_init: spec.initCount,
                regularize: "\(spec.regularize)", min_region: spec.minRegion, connectivity: spec.connectivity))
    }

    /// A classical run's `config` (snake-case keys, as results files name them).
    private struct ClassicalConfiguration: Encodable {
        let spec, method, space: String, clusters: Int, map: String, oracle: Bool, seed, n_init: Int
        let regularize: String, min_region, connectivity: Int
    }

    static func configurationJSON(_ configuration: DeepLabConfiguration) throws -> String {
        try SortedJSON.string(configuration)
    }

    /// The model run's `config`: the model's configuration, and for an ensemble or test-time views also the
    /// members and the views.
    static func modelConfigurationJSON(_ segmenter: VolumeSegmenter, options: Options) throws -> String {
        guard segmenter.passesPerSlice > 1 else { return try configurationJSON(segmenter.model.configuration) }
        struct Record: Encodable {
            let configuration: DeepLabConfiguration
            let members: [String]
            let views: [String]
        }
        return try SortedJSON.string(
            Record(
                configuration: segmenter.model.configuration, members: [options.model] + options.ensemble,
                views: segmenter.views.map {
                    "flip rows \($0.flipRows), flip columns \($0.flipColumns), scale \($0.scale)"
                }))
    }

    // MARK: - Table and report

    /// Per class and run: mean ± std of Dice, IoU and HD95, and the paired Wilcoxon p-value against DeepLabV3.
    public static func table(_ outcome: Outcome) -> String {
        guard let first = outcome.runs.first else { return "" }
        let classWidth = max(8, (first.classNames.map(\.count).max() ?? 0) + 1)
        let runWidth = max(6, (outcome.runs.map(\.name.count).max() ?? 0) + 1)
        let pad = TableText.pad
        var lines = [
            pad("class", classWidth) + pad("run", runWidth) + pad("Dice", 16) + pad("IoU", 16)
                + pad("HD95 mm", 28) + "p (Wilcoxon, Dice) vs \(first.name)"
        ]
        for c in 1..<first.classNames.count {
            for (index, run) in outcome.runs.enumerated() {
                let compared = index > 0 && index <= outcome.comparisons.count  // a shard's part has none
                let dice = compared ? outcome.comparisons[index - 1].rows[.dice] : nil
                let p =
                    compared ? dice.map { TableText.pValue($0[c].wilcoxon.pValue, pairs: $0[c].pairCount) } ?? "" : ""
                lines.append(
                    pad(first.classNames[c], classWidth) + pad(run.name, runWidth)
                        + pad(TableText.cell(run.summaries(.dice)[c], digits: 3), 16)
                        + pad(TableText.cell(run.summaries(.iou)[c], digits: 3), 16)
                        + pad(TableText.cell(run.summaries(.hd95)[c], digits: 2), 28) + p)
            }
        }
        lines += TableText.lesionTable(outcome.runs, classWidth: classWidth, runWidth: runWidth)
        return lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n") + "\n"
    }

    /// Writes the overlay folder as a whole (`writeFolderAtomically`): a kill leaves the previous set of
    /// overlays or the new one, never a mixture.
    static func writeOverlays(
        to folder: String, names: [String], maps: [[LabelMap]], images: [ScanImage],
        references: [LabelMap], caseNames: [String]
    ) throws {
        try writeFolderAtomically(to: folder) { temporary in
            for (index, image) in images.enumerated() {
                let frame = image.frames / 2
                try Overlay.write(
                    image: image, labels: references[index], frame: frame,
                    to: "\(temporary)/\(caseNames[index])_reference.png")
                for (name, runMaps) in zip(names, maps) {
                    try Overlay.write(
                        image: image, labels: runMaps[index], frame: frame,
                        to: "\(temporary)/\(caseNames[index])_\(name).png")
                }
            }
        }
    }

    static func report(
        runs: [ResultsRun], comparisons: [ResultsComparison], images: [ScanImage],
        references: [LabelMap], predictions: [[LabelMap]], set: LabeledSet,
        uncertainty: (name: String, values: [[UInt8]])? = nil, policy: SliceScroller.Policy = SliceScroller.Policy()
    ) throws -> HTMLReport {
        let methods = runs.enumerated().map { index, run in
            HTMLReport.Method(run, against: index == 0 ? nil : comparisons[index - 1])
        }
        let pictures = try images.indices.map { index -> HTMLReport.CasePictures in
            let image = images[index]
            let frame = image.frames / 2
            func overlay(_ map: LabelMap) throws -> Data {
                try Overlay.render(image: image, labels: map, frame: frame).encoded()
            }
            let plain = try PNGImage(
                rows: image.rows, columns: image.columns, channels: 3,
                samples: Overlay.displayRGB(image, frame: frame)
            ).encoded()
            return HTMLReport.CasePictures(
                caseID: runs[0].caseIDs[index], image: plain,
                reference: try overlay(references[index]),
                methods: try predictions.map { try overlay($0[index]) })
        }
        var report = HTMLReport(
            title: "SliceLab comparison on \(set.description.name)",
            classNames: set.description.classes, caseIDs: runs[0].caseIDs, methods: methods,
            pictures: pictures)
        try addScrollers(
            to: &report, runNames: runs.map(\.name), images: images, references: references,
            predictions: predictions, uncertainty: uncertainty, policy: policy)
        return report
    }

    /// Gives the report's 3-D cases (more than one slice) slice scrollers, in the report's order, within
    /// `policy`'s limits, and says in the report how many got one.
    /// - Parameters:
    ///   - images, references: per case of `report.caseIDs`; `predictions[run][case]` per name of `runNames`.
    ///   - uncertainty: a map per case at 0…255 shown as a heat layer after the label layers (empty for a case
    ///     without one).
    static func addScrollers(
        to report: inout HTMLReport, runNames: [String], images: [ScanImage],
        references: [LabelMap], predictions: [[LabelMap]], uncertainty: (name: String, values: [[UInt8]])? = nil,
        policy: SliceScroller.Policy
    ) throws {
        let caseIDs = report.caseIDs
        let volumes = caseIDs.indices.filter { images[$0].frames > 1 }
        guard !volumes.isEmpty else { return }
        var (pixels, reductions, sampled) = (0, Set<Int>(), 0)
        for caseID in report.caseOrder() where report.scrollers.count < policy.maxCases {
            guard let index = caseIDs.firstIndex(of: caseID), images[index].frames > 1 else { continue }
            let image = images[index]
            let cost = policy.pixelCost(frames: image.frames, rows: image.rows, columns: image.columns)
            guard pixels + cost <= policy.maxTotalPixels else { continue }
            pixels += cost
            let layers = [("reference", references[index])] + zip(runNames, predictions).map { ($0, $1[index]) }
            let heat = uncertainty.flatMap {
                index < $0.values.count && !$0.values[index].isEmpty ? [($0.name, $0.values[index])] : nil
            }
            let scroller = try SliceScroller(
                caseID: caseID, image: image, layers: layers, heatLayers: heat ?? [], policy: policy)
            reductions.insert(scroller.reduction)
            if scroller.sliceIndices.count < scroller.frames { sampled += 1 }
            report.scrollers.append(scroller)
        }
        var note =
            "Slice scrollers for \(report.scrollers.count) of \(volumes.count) 3-D cases (at most "
            + "\(policy.maxCases), worst first, within \(policy.maxTotalPixels / 1_000_000) M embedded slice pixels); "
        note +=
            reductions.subtracting([1]).isEmpty
            ? "full in-plane resolution"
            : "in-plane resolution reduced to at most \(policy.maxSide) px per side"
        if sampled > 0 { note += "; \(sampled) case(s) show \(policy.maxSlices) evenly spaced slices" }
        if report.scrollers.count < volumes.count { note += "; the others show their middle slice" }
        report.scrollerNote = note + "."
    }
}
