import Distributed
import Foundation
import SliceLabKit
import SliceLabResults

/// `slicelab train DATASET --arch … --num-classes K --out MODEL.h5` (issue #5).
enum TrainCommand: Command {
    static let spec = CommandSpec(
        name: "train",
        summary: "Train a DeepLabV3 model on a labeled set.",
        positionals: [PositionalSpec("DATASET", help: "A labeled-set folder (images/, labels/, dataset.json).")],
        options: [
            OptionSpec("arch", .choice(of: Architecture.self), help: "Architecture.", required: true),
            OptionSpec("num-classes", .int(2...65535), help: "Classes K.", required: true),
            OptionSpec("in-channels", .choice(["1", "3"]), help: "Input channels.", default: "1"),
            OptionSpec(
                "context", .int(0...16),
                help: "2.5-D: N neighbouring slices on each side of a volume's slice "
                    + "as extra input channels (edge slices replicated); stored in the checkpoint.", default: "0"),
            OptionSpec(
                "decoder", .choice(of: DeepLabDecoder.self),
                help:
                    "DeepLabV3's head (torchvision's layout) or the DeepLabV3+ decoder (segmentation-models-pytorch's: "
                    + "stride-4 features joined to ASPP, logits at stride 4).", default: "planned"),
            OptionSpec(
                "output-stride", .choice(["8", "16"]),
                help: "Backbone output stride (atrous rates 12,24,36 at 8; "
                    + "6,12,18 at 16).", default: "planned"),
            OptionSpec(
                "atrous-rates", .doubles, valueName: "R1,R2,…",
                help: "ASPP's 3×3 dilation rates (small images and crops want smaller ones).",
                default: "the output stride's"),
            OptionSpec("aspp-channels", .int(8...4096), help: "ASPP and head width.", default: "256"),
            OptionSpec(
                "input-scale", .int(1...4),
                help: "Resample the input by this factor inside the model (effective "
                    + "output stride = output stride / scale).", default: "planned"),
            OptionSpec("epochs", .int(1...Int.max), help: "Epochs."),
            OptionSpec("steps", .int(1...Int.max), help: "Steps (instead of epochs)."),
            OptionSpec("batch", .int(1...Int.max), help: "Batch size (global under mpirun).", default: "planned"),
            OptionSpec("crop", .int(8...Int.max), help: "Random crop size in pixels.", default: "planned"),
            OptionSpec(
                "normalize", .choice(TrainOptions.normalizationNames),
                help: "Intensity normalisation: ct clips to the training foreground's 0.5–99.5 percentiles and "
                    + "z-scores with its mean and std; zscore per image; percentile clips to each image's 0.5–99.5 "
                    + "percentiles and scales to [0, 1].", default: "dataset.json's, else planned by modality"),
            OptionSpec(
                "augment", .choice(["standard", "acquisition"]),
                help: "Training augmentation: standard (flips, rotation, zoom, contrast, brightness, gamma, noise) or "
                    + "acquisition (standard plus a smooth bias field, Gaussian blur and simulated low resolution, "
                    + "as nnU-Net and MONAI draw them: for test images from another scanner).", default: "standard"),
            OptionSpec("lr", .double(0...Double.greatestFiniteMagnitude), help: "Base learning rate."),
            OptionSpec(
                "optimizer", .choice(of: OptimizerConfiguration.Kind.self), help: "Optimizer.", default: "adamw"),
            OptionSpec("loss", .choice(of: LossConfiguration.Kind.self), help: "Loss.", default: "dicece"),
            OptionSpec("class-weights", .doubles, help: "Cross-entropy class weights."),
            OptionSpec("init", valueName: "WEIGHTS", help: "Start from a torchvision safetensors or checkpoint."),
            OptionSpec("resume", valueName: "CKPT", help: "Resume an interrupted run exactly."),
            OptionSpec("val-every", .int(1...Int.max), help: "Validate every N steps."),
            OptionSpec("seed", .int(), help: "Random seed.", default: "0"),
            OptionSpec(
                "threads", .int(1...1024), help: "Compute threads (per rank under mpirun/srun).",
                default: "the machine's cores"),
            OptionSpec(
                "precision", .choice(["fp32", "bf16"]),
                help: "Convolutions in bf16 (f32 master weights, optimizer, batch norm and loss), only where "
                    + "oneDNN's ISA has bf16 (AVX512_CORE_BF16, AMX).", default: "fp32"),
            OptionSpec(
                "sync-bn", .flag,
                help: "Under mpirun/srun: batch-norm statistics over the global batch, "
                    + "not per rank."),
            OptionSpec("out", valueName: "MODEL.h5", help: "Checkpoint to write.", required: true),
            OptionSpec("skip-bad", .flag, help: "Skip (and list) invalid cases instead of stopping."),
            OptionSpec(
                "fold", valueName: "K|all",
                help:
                    "Fold K of splits_final.json (else of the seeded 5-fold split; a set of SliceLab's layout pools train and val, test held out) trains "
                    + "and its val cases validate; all trains every fold into OUT/fold_K/model.h5 (--out a folder), "
                    + "scores each fold's val cases into OUT/fold_K/validation.h5 and pools them into "
                    + "OUT/crossval.h5 (folds already there are kept).", default: "0"),
            OptionSpec(
                "post", .choice(["none", "auto"]),
                help: "With --fold all: auto chooses post-processing on every fold's validation cases as nnU-Net "
                    + "does (each whole-map step, then each class's component rules, against none; kept when the "
                    + "mean Dice rises with paired Wilcoxon p < 0.05) and stores it in OUT/postprocessing.json, "
                    + "which segment --model OUT/ --regularize auto applies.", default: "none"),
            OptionSpec(
                "report", valueName: "DIR",
                help: "With --fold all: an HTML report of the cross-validation (each fold, the pooled run, and the "
                    + "pooled run after --post auto's choice with its paired test)."),
            splitSeedOption, maxMemoryOption
        ],
        discussion: """
            Planned from the training cases' fingerprint (spacing, sizes, smallest structure per class,
            foreground intensities), as nnU-Net plans: crop, input scale, output stride, batch and normalisation;
            each flag above overrides its part. The plan is printed and stored in the checkpoint (attribute plan).
            Writes the best checkpoint (by validation mean foreground Dice) to MODEL.h5 and the last one to
            MODEL.last.h5; --resume MODEL.last.h5 continues an interrupted run exactly.
            Started by `mpirun -np N` (or `srun --mpi=pmix`), it trains data-parallel: --batch is the global batch,
            split over the N ranks (it must be divisible by N); rank 0 writes the checkpoints.
            """)

    static func run(_ arguments: ParsedArguments) throws {
        guard let dataset = arguments.positional(0), let architecture = arguments.string("arch"),
            let classCount = arguments.int("num-classes"), let out = arguments.string("out")
        else {
            throw UsageError("slicelab train: DATASET, --arch, --num-classes and --out are required")
        }
        if arguments.has("epochs") && arguments.has("steps") {
            throw UsageError("slicelab train: give --epochs or --steps, not both")
        }
        var options = TrainOptions(
            datasetPath: dataset, architecture: architecture, classCount: classCount,
            outputPath: out)
        options.inputChannels = arguments.int("in-channels") ?? 1
        options.context = arguments.int("context") ?? 0
        options.outputStride = arguments.int("output-stride")
        options.decoder = arguments.choice("decoder")
        if let rates = arguments.doubles("atrous-rates") {
            guard rates.allSatisfy({ $0 == $0.rounded() && $0 >= 1 && $0 <= 512 }) else {
                throw UsageError("slicelab train: --atrous-rates: each rate must be a whole number in 1...512")
            }
            options.atrousRates = rates.map { Int($0) }
        }
        options.asppChannels = arguments.int("aspp-channels")
        options.inputScale = arguments.int("input-scale")
        options.epochs = arguments.int("epochs")
        options.steps = arguments.int("steps")
        options.batchSize = arguments.int("batch")
        options.cropSize = arguments.int("crop")
        options.preprocessing = arguments.string("normalize").flatMap(TrainOptions.normalization(named:))
        options.acquisitionAugmentation = arguments.string("augment") == "acquisition"
        options.learningRate = arguments.double("lr")
        options.optimizer = arguments.choice("optimizer") ?? .adamw
        options.loss = arguments.choice("loss") ?? .diceCE
        options.classWeights = arguments.doubles("class-weights")
        options.initialWeights = arguments.string("init")
        options.resumePath = arguments.string("resume")
        options.validateEvery = arguments.int("val-every")
        options.seed = UInt64(bitPattern: Int64(arguments.int("seed") ?? 0))
        options.threads = arguments.int("threads")
        options.skipBad = arguments.flag("skip-bad")
        options.limits = try readLimits(arguments, command: "train")
        options.selection = splitSelection(arguments)
        let foldText = arguments.string("fold") ?? "0"
        guard foldText == "all" || Int(foldText).map({ (0...99).contains($0) }) == true else {
            throw UsageError("slicelab train: --fold: expected a fold number 0…99 or all, not '\(foldText)'")
        }
        options.selection.fold = Int(foldText) ?? 0
        // --out OUT/ (a folder): the fold's model and validation in OUT/fold_K/; --fold all needs it.
        let foldsFolder = out.hasSuffix("/") || URL(fileURLWithPath: out).pathExtension.isEmpty
        if foldText == "all" && !foldsFolder {
            throw UsageError("slicelab train: --fold all writes one model per fold: give --out a folder (OUT/)")
        }
        let choosesPost = arguments.string("post") == "auto"
        if arguments.has("report") && foldText != "all" {
            throw UsageError("slicelab train: --report shows the cross-validation: add --fold all")
        }
        if choosesPost && foldText != "all" {
            throw UsageError("slicelab train: --post auto chooses on every fold's validation cases: add --fold all")
        }
        options.synchronizeBatchNorm = arguments.flag("sync-bn")
        if arguments.string("precision") == "bf16" {
            if let problem = Precision.bf16Problem {
                throw UsageError("slicelab train: --precision bf16: \(problem)")
            }
            options.precision = .bf16
        }
        let communicator = try Communicator.fromEnvironment()
        if let batch = options.batchSize, batch % communicator.size != 0 {
            throw UsageError(
                "slicelab train: --batch \(batch) must be divisible by the number of ranks "
                    + "(\(communicator.size))")
        }
        try runAsRank(communicator, command: "train") {
            if foldsFolder {
                let outcome = try TrainWorkflow.runFolds(
                    options, fold: Int(foldText), communicator: communicator, log: standardError,
                    makeNetwork: TrainWorkflow.makeEngineNetwork)
                if let (pooled, path) = outcome.pooled {
                    print(TableText.summary(pooled))
                    print("wrote \(path): runs \(outcome.runs.map(\.name).joined(separator: ", ")), crossval (pooled)")
                    var post: (run: ResultsRun, comparison: ResultsComparison)?
                    if choosesPost {
                        let choice = try TrainWorkflow.choosePostProcessing(options, log: standardError)
                        print("post-processing (\(choice.path)): \(choice.summary)")
                        post = (choice.run, choice.comparison)
                    }
                    if let folder = arguments.string("report") {
                        try TrainWorkflow.crossValidationReport(outcome, post: post, dataset: pooled.dataset).write(
                            to: folder)
                        print("report in \(folder)/index.html")
                    }
                }
            } else {
                try TrainWorkflow.run(options, communicator: communicator, makeNetwork: TrainWorkflow.makeEngineNetwork)
            }
        }
    }
}
