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
    }

    /// The default classical configurations when none is given: k-means and multi-Otsu on intensity.
    public static let defaultClassical = ["kmeans:space=gray,map=train-vote", "multiotsu:space=gray,map=train-vote"]

    /// Runs the comparison and writes the results file (and the report).
    ///
    /// - Throws: `LabeledSetError` naming a bad case, `CompareError`, and the errors of the model, the
    ///   classical methods and the results writer. Nothing is written unless every run completed.
    public static func run(_ options: Options, log: (String) -> Void = { _ in }) throws -> Outcome {
        try prepareOutputLocation(options.output)
        if options.shard != nil {
            if options.report != nil { throw ShardError.notShardable(option: "--report", command: "compare") }
            if options.overlays != nil { throw ShardError.notShardable(option: "overlays", command: "compare") }
            if options.predictions != nil {
                throw ShardError.notShardable(option: "--predictions", command: "compare")
            }
            if !options.overwrite, FileManager.default.fileExists(atPath: options.output) {
                throw ShardError.outputExists(file: options.output)
            }
        }
        for folder in [options.report, options.overlays, options.predictions].compactMap({ $0 }) {
            try prepareOutputLocation(folder, isFolder: true)
        }
        var timings: [(String, Double)] = []
        func timed<T>(_ stage: String, _ body: () throws -> T) rethrows -> T {
            let start = Date()
            defer {
                let seconds = Date().timeIntervalSince(start)
                if let index = timings.firstIndex(where: { $0.0 == stage }) {
                    timings[index].1 += seconds
                } else {
                    timings.append((stage, seconds))
                }
            }
            return try body()
        }
        if let threads = options.threads { setComputeThreads(threads) }
        let set = try timed("load") {
            try LabeledSet.open(
                options.dataset, skipBad: options.skipBad, limits: options.limits,
                selection: options.selection)
        }
        let allCases = set.cases(in: options.split)
        guard !allCases.isEmpty else {
            throw CompareError.emptySplit(
                dataset: options.dataset, split: options.split,
                available: set.splits.keys.sorted())
        }
        var caseNames = allCases
        if let shard = options.shard {
            let sizes = allCases.map { name in
                set.files[name].map { files in
                    files.images.map { ShardSplit.diskSize($0.path) }.reduce(0, +)
                        + ShardSplit.diskSize(files.labels.path)
                } ?? 0
            }
            caseNames = try ShardSplit.indices(of: shard, sizes: sizes).map { allCases[$0] }
        }
        let segmenter = try timed("load") {
            try VolumeSegmenter.load(checkpoint: options.model, precision: options.precision)
        }
        let model = segmenter.model
        guard model.configuration.classCount == set.classCount else {
            throw LabeledSetError.classCountMismatch(
                model: options.model, modelClasses: model.configuration.classCount,
                dataset: options.dataset, datasetClasses: set.classCount)
        }
        let samples = try timed("load") { try caseNames.map { try set.load($0) } }
        let images = samples.map(ScanImage.init)
        let references = samples.map { labelMap($0.labels.values, like: $0) }
        // Other tools' runs first: a missing or misshapen file fails before the model runs.
        let externalMaps = try timed("load") {
            try options.external.map {
                try externalPredictions(
                    run: $0.name, folder: $0.folder, caseNames: caseNames, references: references,
                    set: set)
            }
        }

        // DeepLabV3, case by case (oneDNN uses every core for one case).
        let progress = ProgressReporter("compare", total: samples.count * (1 + options.classical.count))
        let posts = options.post.filter { $0 != .step(.none) }
        var deep: [LabelMap] = []
        var outputs = DeepOutputs()
        if posts.isEmpty {
            for (index, image) in images.enumerated() {
                let labels = try timed("segment deeplabv3") {
                    try segmenter.segment(image).labels
                }
                deep.append(labelMap(labels, like: samples[index]))
                progress.advance(status: "deeplabv3 \(samples[index].name)")
            }
        } else {
            outputs = try timed("segment deeplabv3") {
                try DeepOutputs.segment(segmenter, images: images) {
                    progress.advance(status: "deeplabv3 \(samples[$0].name)")
                }
            }
            deep = zip(outputs.labels, samples).map { labelMap($0, like: $1) }
        }

        // Each classical configuration, cases in parallel.
        var predictions: [(name: String, method: String, model: String, config: String, maps: [LabelMap])] = [
            (
                options.runPrefix + "deeplabv3", "deeplabv3", options.model, try configurationJSON(model.configuration),
                deep
            )
        ]
        var postprocessing: [String: String] = [:]
        for post in posts {
            let name = options.runPrefix + "deeplabv3.\(post)"
            let maps: [[Int32]] = try timed("post-process \(post)") {
                switch post {
                case .step(let step):
                    let settings = SegmentPostProcessing(step: step, crf: options.crf)
                    postprocessing[name] = try SortedJSON.string(
                        PostProcessingRecord(method: "\(step)", crf: step == .crf ? options.crf.spec : nil))
                    return try images.indices.map {
                        try outputs.apply(settings, case: $0, image: images[$0], classCount: set.classCount)
                    }
                case .auto:
                    let choice = try chooseAuto(set: set, segmenter: segmenter, options: options)
                    postprocessing[name] = choice.json
                    return try images.indices.map {
                        try choice.apply(case: $0, outputs: outputs, image: images[$0], classCount: set.classCount)
                    }
                }
            }
            predictions.append(
                (
                    name, "deeplabv3", options.model, try configurationJSON(model.configuration),
                    zip(maps, samples).map { labelMap($0, like: $1) }
                ))
        }
        for spec in options.classical {
            let maps = try timed("segment \(spec.runName)") {
                try classicalPredictions(
                    spec, set: set, samples: samples, images: images, options: options,
                    progress: progress)
            }
            predictions.append(
                (
                    options.runPrefix + spec.runName, spec.method.rawValue, spec.text,
                    try classicalConfigJSON(spec, set), maps
                ))
        }
        for ((name, folder), maps) in zip(options.external, externalMaps) {
            predictions.append(
                (
                    options.runPrefix + name, "external", folder,
                    DatasetLayouts.jsonText(["folder": folder]), maps
                ))
        }
        let names = predictions.map(\.name)
        if let duplicate = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
            throw CompareError.duplicateRun(name: duplicate)
        }

        // Evaluation.
        let settings = EvaluationSettings(classCount: set.classCount)
        let runs = try timed("evaluate") {
            try predictions.map { prediction -> ResultsRun in
                let metrics = try evaluate(
                    prediction.maps, references: references, caseNames: caseNames,
                    settings: settings)
                var stored: [String: LabelMap] = [:]
                for (name, map) in zip(caseNames, prediction.maps) { stored[name] = map }
                var run = try ResultsRun(
                    name: prediction.name, method: prediction.method, model: prediction.model,
                    dataset: set.description.name, configJSON: prediction.config,
                    settings: settings, classNames: set.description.classes,
                    cases: zip(zip(caseNames, samples), metrics).map { ($0.0, $0.1.spacing, $1) },
                    labels: stored)
                run.postprocessingJSON = postprocessing[prediction.name]
                run.splitJSON = set.splitJSON
                return run
            }
        }
        let pairs = runs.dropFirst().map { (a: runs[0].name, b: $0.name) }
        if let shard = options.shard {
            let record = ShardRecord(
                command: "compare", shard: shard, configJSON: try shardConfigJSON(options),
                caseOrder: allCases, cases: caseNames,
                skipped: set.skipped.map { ($0.name, "\($0.error)") },
                runOrder: runs.map(\.name), comparisons: pairs)
            try timed("write") {
                try ResultsFile.write(runs: runs, to: options.output, overwrite: true, shard: record, updating: false)
            }
            return Outcome(
                runs: runs, comparisons: [], skipped: set.skipped,
                timings: timings.map { (stage: $0.0, seconds: $0.1) })
        }
        let comparisons = try timed("evaluate") { try runs.dropFirst().map { try ResultsComparison(runs[0], $0) } }
        try timed("write") {
            try ResultsFile.write(
                runs: runs, comparisons: comparisons, to: options.output, overwrite: options.overwrite)
            if let folder = options.overlays {
                try writeOverlays(
                    to: folder, names: predictions.map(\.name), maps: predictions.map(\.maps),
                    images: images, references: references, caseNames: caseNames)
            }
            if let folder = options.predictions {
                try writePredictions(
                    to: folder, names: predictions.map(\.name), maps: predictions.map(\.maps),
                    samples: samples, set: set)
            }
            if let folder = options.report {
                try report(
                    runs: runs, comparisons: comparisons, images: images, references: references,
                    predictions: predictions.map(\.maps), set: set
                ).write(to: folder)
            }
        }
        return Outcome(
            runs: runs, comparisons: comparisons, skipped: set.skipped,
            timings: timings.map { (stage: $0.0, seconds: $0.1) })
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
            var map = try LoadedLabels.read(path, limits: set.limits).labels
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
                external: options.external.map { "\($0.name)=\($0.folder)" }))
    }

    /// The `/shard` `config` of a compare run (snake-case keys, as results files name them).
    private struct ShardConfiguration: Encodable {
        let dataset, model: String, classical: [String], split: String, skip_bad: Bool, vote_cases: Int
        let run_prefix: String, post: [String], crf: String, fold: Int, split_seed: UInt64, external: [String]
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

    static func labelMap(_ labels: [Int32], like sample: LabeledSample) -> LabelMap {
        let shape = sample.image.shape
        return LabelMap(frames: shape[0], rows: shape[2], columns: shape[3], labels: labels, spacing: sample.spacing)
    }

    /// Per-case metrics on the references' grids, cases in parallel.
    static func evaluate(
        _ predictions: [LabelMap], references: [LabelMap], caseNames: [String],
        settings: EvaluationSettings
    ) throws -> [CaseMetrics] {
        let results = ConcurrentResults<CaseMetrics>(count: predictions.count)
        Parallel.forEach(predictions.count) { index in
            results.set(index) {
                try CaseEvaluation.metrics(
                    caseID: caseNames[index], reference: references[index],
                    prediction: predictions[index], spacing: references[index].spacing,
                    settings: settings, remedy: "the set's dataset.json lists fewer classes")
            }
        }
        return try results.values()
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
        var mapping: ClassMapping?
        switch spec.mapping {
        case .intensity:
            guard clusterCount == set.classCount else {
                throw CompareError.invalidMapping(
                    spec: spec.text,
                    reason: "map=intensity needs classes=\(set.classCount) "
                        + "(the set's class count), not \(clusterCount)")
            }
        case .trainVote:
            mapping = try trainVote(spec, clusterOptions, set: set, count: options.voteCases)
        case .oracle:
            break
        }
        let results = ConcurrentResults<LabelMap>(count: images.count)
        Parallel.forEach(images.count) { index in
            results.set(index) {
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
                return labelMap(classes, like: samples[index])
            }
        }
        return try results.values()
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
        let results = ConcurrentResults<([Int32], [Int32])>(count: chosen.count)
        Parallel.forEach(chosen.count) { index in
            results.set(index) {
                let sample = try set.load(chosen[index])
                let clusters = try ClassicalSegmentation.cluster(ScanImage(sample), options: clusterOptions).labels
                return (clusters, sample.labels.values)
            }
        }
        let pairs = try results.values()
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
                regularize: spec.regularize.rawValue, min_region: spec.minRegion, connectivity: spec.connectivity))
    }

    /// A classical run's `config` (snake-case keys, as results files name them).
    private struct ClassicalConfiguration: Encodable {
        let spec, method, space: String, clusters: Int, map: String, oracle: Bool, seed, n_init: Int
        let regularize: String, min_region, connectivity: Int
    }

    static func configurationJSON(_ configuration: DeepLabConfiguration) throws -> String {
        try SortedJSON.string(configuration)
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
                let p = compared ? String(format: "%.2g", dice?[c].wilcoxon.pValue ?? .nan) : ""
                lines.append(
                    pad(first.classNames[c], classWidth) + pad(run.name, runWidth)
                        + pad(TableText.cell(run.summaries(.dice)[c], digits: 3), 16)
                        + pad(TableText.cell(run.summaries(.iou)[c], digits: 3), 16)
                        + pad(TableText.cell(run.summaries(.hd95)[c], digits: 2), 28) + p)
            }
        }
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
        policy: SliceScroller.Policy = SliceScroller.Policy()
    ) throws -> HTMLReport {
        let k = set.classCount
        func perCase(_ run: ResultsRun, _ metric: MetricName) -> [[Double]] {
            let columns = (0..<k).map { run.values(metric, classIndex: $0) }
            return (0..<run.caseIDs.count).map { i in columns.map { $0[i] } }
        }
        let methods = runs.enumerated().map { index, run in
            HTMLReport.Method(
                name: run.name, dice: perCase(run, .dice), iou: perCase(run, .iou),
                hd95: perCase(run, .hd95),
                pValues: index == 0
                    ? nil
                    : (0..<k).map {
                        comparisons[index - 1].rows[.dice]?[$0].wilcoxon.pValue ?? .nan
                    })
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
            predictions: predictions, policy: policy)
        return report
    }

    /// Gives the report's 3-D cases (more than one slice) slice scrollers, in the report's order, within
    /// `policy`'s limits, and says in the report how many got one.
    /// - Parameters:
    ///   - images, references: per case of `report.caseIDs`; `predictions[run][case]` per name of `runNames`.
    static func addScrollers(
        to report: inout HTMLReport, runNames: [String], images: [ScanImage],
        references: [LabelMap], predictions: [[LabelMap]],
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
            let scroller = try SliceScroller(caseID: caseID, image: image, layers: layers, policy: policy)
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

/// Collects results of `concurrentPerform` by index; the first error (in case order) is rethrown.
final class ConcurrentResults<T>: @unchecked Sendable {
    private var slots: [Result<T, Error>?]
    private let lock = NSLock()

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ body: () throws -> T) {
        let result = Result { try body() }
        lock.lock()
        slots[index] = result
        lock.unlock()
    }

    func values() throws -> [T] {
        try slots.map { slot in
            guard let slot else { throw CompareError.internalInconsistency("a case produced no result") }
            return try slot.get()
        }
    }
}
