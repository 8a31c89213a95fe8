import DeepLab
import DeepLabTraining
import Distributed
import Foundation
import ImageFiles
import SliceLabDatasets
import SliceLabInference
import SliceLabSupport

/// The options of `slicelab train`, with the CLI's names and defaults.
public struct TrainOptions: Sendable {
    public var datasetPath: String
    public var architecture: String
    public var classCount: Int
    public var inputChannels: Int = 1
    /// `--context N`: slices z − N … z + N of a volume as the input of slice z (2.5-D; edge slices replicated),
    /// so the model takes `inputChannels × (2N + 1)` channels. Stored in the checkpoint (`SliceSampling`).
    public var context: Int = 0
    /// The backbone's output stride (8 or 16) and the ASPP width; the architecture's defaults when nil.
    public var outputStride: Int?
    public var asppChannels: Int?
    /// ASPP's dilation rates; 12/24/36 at output stride 8 and 6/12/18 at 16 when nil.
    public var atrousRates: [Int]?
    /// The model's input resampling factor (`DeepLabConfiguration.inputScale`); 1 when nil.
    public var inputScale: Int?
    /// `--decoder`: DeepLabV3's head or the DeepLabV3+ decoder (`DeepLabConfiguration.decoder`); planned when nil.
    public var decoder: DeepLabConfiguration.Decoder?
    public var epochs: Int?
    public var steps: Int?
    /// `--batch` and `--crop`; planned from the set's fingerprint when nil (`TrainingPlan`).
    public var batchSize: Int?
    public var cropSize: Int?
    /// `--normalize`: the normalisation, before `dataset.json`'s and the plan's. A `.clippedZScore` given here
    /// with zero bounds and deviation (`TrainOptions.foregroundCT`) takes the fingerprint's statistics.
    public var preprocessing: Preprocessing?
    /// The share of slices drawn for a class they hold on sets of volumes (`BatchSampler.classSlices`).
    public var classBalancedSliceProbability = 1.0 / 3
    /// Default 1e-3 for AdamW, 1e-2 for SGD.
    public var learningRate: Double?
    public var optimizer: OptimizerConfiguration.Kind = .adamw
    public var loss: LossConfiguration.Kind = .diceCE
    public var classWeights: [Double]?
    /// Weights to start from (a torchvision safetensors file or a SliceLab checkpoint), for the engine.
    public var initialWeights: String?
    public var resumePath: String?
    /// Default: once per epoch.
    public var validateEvery: Int?
    public var seed: UInt64 = 0
    public var threads: Int?
    public var outputPath: String
    public var skipBad = false
    public var augmentation: AugmentationConfiguration?
    /// `--augment acquisition`: the default augmentation plus a second scanner's changes (`AcquisitionAugmentation`).
    public var acquisitionAugmentation = false
    /// The bound on decoded sizes the set's files are read with (`--max-memory`).
    public var limits: ReadLimits = .standard
    /// The fold and split seed for nnU-Net and Decathlon sets (`--fold`, `--split-seed`).
    public var selection = SplitSelection()
    /// Batch-norm statistics over the global batch of a data-parallel job (`--sync-bn`) instead of per rank.
    public var synchronizeBatchNorm = false
    /// `--precision`: bf16 trains with bf16 convolutions (f32 master weights, optimizer state, batch norm and
    /// loss; `DeepLabV3.useBf16(_:)`); fp32 otherwise. int8 is inference only.
    public var precision: Precision = .fp32

    public init(datasetPath: String, architecture: String, classCount: Int, outputPath: String) {
        self.datasetPath = datasetPath
        self.architecture = architecture
        self.classCount = classCount
        self.outputPath = outputPath
    }

    /// `--normalize ct`: CT clipping and z-score with the training foreground's statistics, filled in by the plan.
    public static let foregroundCT = Preprocessing.clippedZScore(low: 0, high: 0, mean: 0, standardDeviation: 0)

    /// The names `--normalize` takes.
    public static let normalizationNames = ["ct", "zscore", "minmax", "percentile", "none"]

    /// The normalisation `--normalize NAME` selects (`percentile` is 0.5–99.5), nil for an unknown name.
    public static func normalization(named name: String) -> Preprocessing? {
        switch name {
        case "ct": return foregroundCT
        case "zscore": return .zScore
        case "minmax": return .minMax
        case "percentile": return .percentile(low: 0.5, high: 99.5)
        case "none": return Preprocessing.none
        default: return nil
        }
    }

    /// Where the last checkpoint goes beside the best one at `outputPath`: `MODEL.last.h5`.
    public var lastCheckpointPath: String {
        let url = URL(fileURLWithPath: outputPath)
        let stem = url.pathExtension.isEmpty ? url.lastPathComponent : url.deletingPathExtension().lastPathComponent
        return url.deletingLastPathComponent().appendingPathComponent(stem + ".last.h5").path
    }
}

/// `slicelab train`: a labeled set → preprocessed, augmented batches → the trainer → checkpoints.
public enum TrainWorkflow {
    /// The run's configuration from the options, the set and the plan (without one: `--batch` or 8, `--crop`
    /// or 256, `--normalize` or `dataset.json`'s or min–max, and no class-balanced slices).
    ///
    /// - Throws: `TrainingError.invalidConfiguration` for options that do not fit the set.
    public static func configuration(
        _ options: TrainOptions, set: LabeledSet,
        plan: TrainingPlan? = nil
    ) throws -> TrainingConfiguration {
        guard options.classCount == set.classCount else {
            throw TrainingError.invalidConfiguration(
                "--num-classes is \(options.classCount) but \(set.folder.path)/"
                    + "dataset.json lists \(set.classCount) classes")
        }
        let trainCount = set.cases(in: "train").count
        guard trainCount > 0 else {
            throw TrainingError.invalidConfiguration("\(set.folder.path): the train split has no usable cases")
        }
        let batchSize = plan?.batchSize ?? options.batchSize ?? 8
        let stepsPerEpoch = (trainCount + batchSize - 1) / batchSize
        let steps = options.steps ?? (options.epochs ?? 1) * stepsPerEpoch
        let rate = options.learningRate ?? (options.optimizer == .sgd ? 1e-2 : 1e-3)
        let warmup = steps >= 100 ? steps / 20 : 0
        let hasVolumes = (plan?.fingerprint.sliceCount ?? 0) > (plan?.fingerprint.caseCount ?? 0)
        return TrainingConfiguration(
            classCount: options.classCount, steps: steps, batchSize: batchSize,
            validateEvery: options.validateEvery ?? max(1, min(steps, stepsPerEpoch)),
            schedule: LearningRateSchedule(baseLearningRate: rate, totalSteps: steps, power: 0.9, warmupSteps: warmup),
            optimizer: OptimizerConfiguration(options.optimizer),
            loss: LossConfiguration(kind: options.loss, classWeights: options.classWeights),
            gradientClipNorm: 10, earlyStoppingPatience: nil, seed: options.seed,
            augmentation: options.augmentation
                ?? AugmentationConfiguration(
                    cropSize: plan?.cropSize ?? options.cropSize ?? 256,
                    classBalancedCropProbability: 1.0 / 3,
                    acquisition: options.acquisitionAugmentation ? AcquisitionAugmentation() : nil),
            preprocessing: plan?.preprocessing ?? options.preprocessing ?? set.description.preprocessing ?? .minMax,
            classBalancedSliceProbability: hasVolumes ? options.classBalancedSliceProbability : nil)
    }

    /// Measures the fingerprint of `samples` (the raw training cases) and plans from it: every part that
    /// `options` fixes is kept (`--crop`, `--decoder`, `--input-scale`, `--output-stride`, `--batch`,
    /// `--normalize`), then
    /// `dataset.json`'s `preprocessing`; the memory budget is `--max-memory`.
    static func makePlan(
        _ options: TrainOptions, set: LabeledSet, samples: [LabeledSample],
        ranks: Int
    ) -> TrainingPlan {
        var builder = DatasetFingerprint.Builder(
            classNames: set.description.classes, channelNames: set.channelNames,
            modality: set.description.modality)
        for sample in samples { builder.add(sample) }
        let fingerprint = builder.finish()
        var given = options.preprocessing
        if given == TrainOptions.foregroundCT {
            given = TrainingPlan.modalityPreprocessing(fingerprint, modality: "CT")
        }
        let overrides = TrainingPlan.Overrides(
            cropSize: options.cropSize, decoder: options.decoder, inputScale: options.inputScale,
            outputStride: options.outputStride, batchSize: options.batchSize,
            preprocessing: given)
        return TrainingPlan.make(
            fingerprint: fingerprint, overrides: overrides,
            datasetPreprocessing: set.description.preprocessing,
            architecture: options.architecture,
            inputChannels: options.inputChannels * (2 * options.context + 1),
            memoryBudgetBytes: options.limits.maxBytes, ranks: ranks)
    }

    /// Makes an image [C, H, W] network input: channels converted to `inputChannels` (gray replicated, or
    /// color averaged), then preprocessed.
    static func prepare(_ image: FloatTensor, inputChannels: Int, preprocessing: Preprocessing) -> FloatTensor {
        var image = convertChannels(image, to: inputChannels)
        preprocessing.apply(to: &image.values)
        return image
    }

    /// An image [C, H, W] with `inputChannels` channels: unchanged when it has them, else its channels
    /// averaged to gray and repeated.
    static func convertChannels(_ image: FloatTensor, to inputChannels: Int) -> FloatTensor {
        let (channels, plane) = (image.shape[0], image.shape[1] * image.shape[2])
        guard channels != inputChannels else { return image }
        var gray = [Float](repeating: 0, count: plane)
        for c in 0..<channels {
            for p in 0..<plane { gray[p] += image.values[c * plane + p] / Float(channels) }
        }
        return FloatTensor(
            shape: [inputChannels, image.shape[1], image.shape[2]],
            values: Array((0..<inputChannels).map { _ in gray }.joined()))
    }

    /// The network input of frame `index` of a case with 2.5-D context: frames index − N … index + N (clamped to
    /// the case, so edge frames repeat), each converted to `inputChannels`, stacked frame-major into
    /// [(2N + 1) · inputChannels, H, W] and preprocessed together, as `VolumeSegmenter` builds it at inference.
    static func contextInput(
        _ sample: LabeledSample, frame index: Int, context: Int, inputChannels: Int,
        preprocessing: Preprocessing
    ) -> FloatTensor {
        let planes = (-context...context).map { offset in
            convertChannels(
                sample.frame(min(max(index + offset, 0), sample.frameCount - 1)).image,
                to: inputChannels
            ).values
        }
        var values = Array(planes.joined())
        preprocessing.apply(to: &values)
        let (height, width) = (sample.image.shape[2], sample.image.shape[3])
        return FloatTensor(shape: [inputChannels * (2 * context + 1), height, width], values: values)
    }

    /// Every frame of every case of `split`, prepared as network input (a volume gives one frame per slice,
    /// with its neighbours as context when `options.context` > 0); the in-plane spacings (row, column) of the
    /// cases that have one are added to `spacings`.
    static func frames(
        of set: LabeledSet, split: String, options: TrainOptions, preprocessing: Preprocessing,
        spacings: inout [[Double]]
    ) throws -> [TrainValidation.Case] {
        try frames(
            of: set.cases(in: split).map { try set.load($0) }, options: options,
            preprocessing: preprocessing, spacings: &spacings)
    }

    /// The frames of loaded cases (see `frames(of:split:options:preprocessing:spacings:)`).
    static func frames(
        of samples: [LabeledSample], options: TrainOptions, preprocessing: Preprocessing,
        spacings: inout [[Double]]
    ) -> [TrainValidation.Case] {
        var cases: [TrainValidation.Case] = []
        for sample in samples {
            if sample.hasSpacing { spacings.append(Array(sample.spacing.suffix(2))) }
            let preprocessing =
                preprocessing.usesCaseStatistics
                ? preprocessing.forCase(caseStatistics(sample, inputChannels: options.inputChannels)) : preprocessing
            for index in 0..<sample.frameCount {
                cases.append(
                    TrainValidation.Case(
                        name: sample.frameCount == 1 ? sample.name : "\(sample.name)#\(index)",
                        image: contextInput(
                            sample, frame: index, context: options.context,
                            inputChannels: options.inputChannels, preprocessing: preprocessing),
                        labels: sample.frame(index).labels))
            }
        }
        return cases
    }

    /// The statistics of a whole case as the network's channels see it (each frame converted to `inputChannels`).
    static func caseStatistics(_ sample: LabeledSample, inputChannels: Int) -> (mean: Double, standardDeviation: Double)
    {
        var statistics = Preprocessing.CaseStatistics()
        for frame in 0..<sample.frameCount {
            statistics.add(convertChannels(sample.frame(frame).image, to: inputChannels).values)
        }
        return statistics.value
    }

    /// Per foreground class (label 1…K − 1), the frames whose labels hold it: the index class-balanced slice
    /// sampling draws from, built once.
    static func classSlices(_ labels: [LabelTensor], classCount: Int) -> [[Int]] {
        var slices = [[Int]](repeating: [], count: max(0, classCount - 1))
        for (index, frame) in labels.enumerated() {
            var present = [Bool](repeating: false, count: classCount)
            for value in frame.values where value > 0 && Int(value) < classCount { present[Int(value)] = true }
            for label in 1..<max(1, classCount) where present[label] { slices[label - 1].append(index) }
        }
        return slices
    }

    /// Every frame of every case of `split` (see `frames(of:split:options:preprocessing:spacings:)`).
    static func frames(
        of set: LabeledSet, split: String, options: TrainOptions,
        preprocessing: Preprocessing
    ) throws -> [TrainValidation.Case] {
        var spacings: [[Double]] = []
        return try frames(of: set, split: split, options: options, preprocessing: preprocessing, spacings: &spacings)
    }

    /// The median in-plane spacing (row, column) of the training cases, as nnU-Net takes its target spacing;
    /// nil when no case has a spacing.
    static func trainingSpacing(_ spacings: [[Double]]) -> [Double]? {
        guard !spacings.isEmpty else { return nil }
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }
        return [median(spacings.map { $0[0] }), median(spacings.map { $0[1] })]
    }

    /// The DeepLabV3 network for `options`: architecture, classes and input channels as given, weights freshly
    /// initialised from `--seed`, or taken from `--init` (a torchvision `state_dict` as `.safetensors`, or a SliceLab
    /// checkpoint's `/parameters`) with the engine's conversions: RGB first-layer filters summed for 1 channel, the
    /// classifiers' last layers left fresh for another class count. The conversion notes go to standard error.
    ///
    /// - Throws: `DeepLabError.invalidConfiguration`, `.malformedWeights`, `.mismatchedWeights`; `ImageFileError`
    ///   for an unreadable checkpoint.
    public static func makeEngineNetwork(_ options: TrainOptions) throws -> SegmentationNetwork {
        guard let architecture = DeepLabConfiguration.Architecture(rawValue: options.architecture) else {
            throw TrainingError.invalidConfiguration("unknown architecture \(options.architecture)")
        }
        var configuration = DeepLabConfiguration(
            architecture: architecture, decoder: options.decoder ?? .v3, classCount: options.classCount,
            inputChannels: options.inputChannels * (2 * options.context + 1),
            seed: options.seed)
        if let stride = options.outputStride {
            configuration.outputStride = stride
            configuration.atrousRates = stride == 16 ? [6, 12, 18] : [12, 24, 36]
        }
        if let rates = options.atrousRates { configuration.atrousRates = rates }
        if let channels = options.asppChannels { configuration.asppChannels = channels }
        if let scale = options.inputScale { configuration.inputScale = scale }
        let model = try DeepLabV3(configuration)
        if options.precision == .int8 {
            throw TrainingError.invalidConfiguration(
                "int8 is inference only: train in fp32 or bf16, then make an "
                    + "int8 checkpoint with 'slicelab quantize'")
        }
        try options.precision.select(for: model)
        guard let initial = options.initialWeights else { return model }
        let notes: [String]
        if initial.lowercased().hasSuffix(".safetensors") {
            notes = try model.loadSafetensors(initial)
        } else {
            let file = try HDF5File.open(initial)
            guard file.exists(TrainingCheckpoint.parameterGroup) else {
                throw DeepLabError.invalidCheckpoint(file: initial, reason: "no /parameters group to start from")
            }
            var tensors: [String: FloatTensor] = [:]
            for name in try file.children(of: TrainingCheckpoint.parameterGroup) {
                let array = try file.read("\(TrainingCheckpoint.parameterGroup)/\(name)", as: Float.self)
                tensors[name] = FloatTensor(shape: array.shape, values: array.values)
            }
            notes = try model.load(stateDict: tensors, source: initial)
        }
        for note in notes { FileHandle.standardError.write(Data("init: \(note)\n".utf8)) }
        return model
    }

    /// Runs training.
    ///
    /// - Parameters:
    ///   - communicator: the ranks of a data-parallel job (`--batch` is the global batch, split over them);
    ///     `.single` for one process. Only rank 0 reports progress and writes checkpoints.
    ///   - makeNetwork: builds the network for the options (architecture, classes, channels, initial weights).
    /// - Throws: `DatasetError` for the set, `TrainingError` for the run, and the network's errors.
    @discardableResult
    public static func run(
        _ options: TrainOptions, progress: TrainProgress? = nil,
        communicator: Communicator = .single,
        makeNetwork: (TrainOptions) throws -> SegmentationNetwork
    ) throws -> Trainer.Summary {
        if let batch = options.batchSize, batch % communicator.size != 0 {
            throw TrainingError.invalidConfiguration(
                "--batch \(batch) is not divisible by the "
                    + "\(communicator.size) ranks of the job")
        }
        try prepareOutputLocation(options.outputPath)
        try prepareOutputLocation(options.lastCheckpointPath)
        let set = try LabeledSet.open(
            options.datasetPath, skipBad: options.skipBad, limits: options.limits,
            selection: options.selection)
        for skipped in set.skipped { FileHandle.standardError.write(Data("skipping \(skipped.error)\n".utf8)) }
        var trainSamples = try set.cases(in: "train").map { try set.load($0) }
        let planStart = Date()
        // nnU-Net measures one fingerprint on every labeled training case, so the folds of a set share their plan
        // (normalisation, crop, scale) and their models can be averaged: with folds, the fold's val cases count too,
        // in the order of their names (sums in another order differ in the last bits).
        let planSamples =
            set.foldCount == nil
            ? trainSamples : try (set.cases(in: "train") + set.cases(in: "val")).sorted().map { try set.load($0) }
        let plan = makePlan(options, set: set, samples: planSamples, ranks: communicator.size)
        let planSeconds = Date().timeIntervalSince(planStart)
        var options = options
        (options.cropSize, options.batchSize) = (plan.cropSize, plan.batchSize)
        (options.inputScale, options.outputStride) = (plan.inputScale, plan.outputStride)
        options.decoder = plan.planDecoder
        let configuration = try configuration(options, set: set, plan: plan)
        let planJSON = try plan.json()
        let reporter =
            communicator.rank != 0
            ? TrainProgress(totalSteps: 0, write: { _ in })
            : progress ?? TrainProgress(totalSteps: configuration.steps)
        for line in plan.lines { reporter.handle(.note(line)) }
        reporter.handle(.note(String(format: "plan: fingerprint and plan took %.2f s", planSeconds)))
        let network = try makeNetwork(options)
        let preprocessing = configuration.preprocessing
        var spacings: [[Double]] = []
        var validationSpacings: [[Double]] = []
        let train = frames(of: trainSamples, options: options, preprocessing: preprocessing, spacings: &spacings)
            .map { ($0.image, $0.labels) }
        trainSamples = []  // the raw cases are no longer needed
        let validationCases = try frames(
            of: set, split: "val", options: options, preprocessing: preprocessing,
            spacings: &validationSpacings)
        let sampling = SliceSampling(context: options.context, spacing: trainingSpacing(spacings))
        let slices =
            configuration.classBalancedSliceProbability == nil
            ? []
            : classSlices(train.map { $0.1 }, classCount: configuration.classCount)
        let sampler = try BatchSampler(
            sampleCount: train.count, batchSize: configuration.batchSize,
            augmenter: try Augmenter(configuration.augmentation),
            rank: communicator.rank, shardCount: communicator.size,
            classSlices: slices,
            classSliceProbability: configuration.classBalancedSliceProbability ?? 0
        ) {
            train[$0]
        }
        let loss = try configuration.loss.makeLoss(classCount: configuration.classCount)
        let trainer = try Trainer(
            network: network, configuration: configuration, sampler: sampler,
            validation: TrainValidation(
                cases: validationCases, classCount: set.classCount,
                loss: loss),
            bestCheckpointPath: options.outputPath,
            lastCheckpointPath: options.lastCheckpointPath,
            progress: reporter)
        if options.synchronizeBatchNorm {
            // Also for one process, so N ranks and one do the same arithmetic.
            SynchronizedBatchNorm.sum = { try communicator.allReduceSum(&$0, what: "batch-norm all-reduce") }
        }
        defer { SynchronizedBatchNorm.sum = nil }
        var dataParallel: DataParallel?
        if communicator.isDistributed {
            let observer = DataParallel(
                communicator: communicator, network: network,
                synchronizesBatchNorm: options.synchronizeBatchNorm)
            trainer.observers.insert(observer, at: 0)
            trainer.sumAcrossRanks = observer.sumAcrossRanks
            dataParallel = observer
        }
        if let model = network as? DeepLabV3 {  // the engine's model file, which `segment --model` loads
            trainer.writeModel = { file in
                try DeepLabCheckpoint.write(model, preprocessing: preprocessing, into: file)
                // The context and training spacing `segment` slices volumes with.
                try sampling.write(into: file)
                // The set's class names, which `segment --out OUT.dcm` gives the DICOM SEG's segments.
                try file.setAttribute("class_names", .strings(set.description.classes))
                // And what the segments are, as coded concepts (`class_codes`).
                if let codes = set.description.classCodes {
                    try file.setAttribute("class_codes", .string(SortedJSON.string(codes)))
                }
            }
            // Same parameter shapes do not mean the same model (rates, stride, scale): a checkpoint that records its
            // model must record this one.
            trainer.readModel = { file in
                if file.hasAttribute("configuration"),
                    try DeepLabCheckpoint.configuration(in: file) != model.configuration
                {
                    throw TrainingError.invalidState(
                        file: file.path,
                        reason: "its model configuration differs from "
                            + "this run's; resume with the same options")
                }
                try TrainingCheckpoint.readParameters(model.parameters, from: file)
            }
        }
        // The plan, with the fingerprint it came from, in every checkpoint whatever the network.
        let writeModel = trainer.writeModel
        trainer.writeModel = { file in
            try writeModel(file)
            try file.setAttribute("plan", .string(planJSON))
        }
        let summary = try trainer.run(resumingFrom: options.resumePath)
        if let dataParallel, communicator.rank == 0 {
            FileHandle.standardError.write(Data((dataParallel.summary + "\n").utf8))
        }
        return summary
    }
}
