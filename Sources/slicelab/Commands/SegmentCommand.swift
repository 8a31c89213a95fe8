import Distributed
import Foundation
import SliceLabDatasets
import SliceLabIO
import SliceLabInference
import SliceLabKit
import SliceLabResults

/// `slicelab segment INPUT --model MODEL.h5 --out OUT` and the torchvision parity entry point (issue #4).
enum SegmentCommand: Command {
    static let spec = CommandSpec(
        name: "segment",
        summary: "Segment an image, series or volume with a DeepLabV3 model.",
        positionals: [
            PositionalSpec(
                "INPUT",
                help: "DICOM file or series folder, NIfTI (.nii, .nii.gz; 4-D = "
                    + "channels), PNG, or HDF5 with /image; with --out FOLDER/ a folder of "
                    + "cases.", optional: true)
        ],
        options: [
            modelOption(),
            ttaOption(), dicomOutputOption,
            OptionSpec(
                "out", valueName: "OUT.h5|OUT.nii.gz|OUT.png|OUT.dcm|OUT/",
                help: "Label map, by extension: HDF5 /labels with the input's geometry, NIfTI (.nii, .nii.gz) "
                    + "with the input's geometry, PNG (one slice), or (DICOM input) a binary DICOM SEG; a "
                    + "folder (no such ending) segments every case of the folder INPUT into OUT/<case>.h5."),
            OptionSpec(
                "context", .int(0...16),
                help: "2.5-D context N the model was trained with (train --context); must match the "
                    + "checkpoint's.", default: "the checkpoint's"),
            OptionSpec(
                "skip-bad", .flag, help: "Folder of cases: skip (and list) a case that fails instead of stopping."),
            shardOption,
            OptionSpec("overlay", valueName: "OVERLAY.png", help: "The image with each class tinted."),
            paletteOption,
            OptionSpec(
                "uncertainty", valueName: "OUT.h5|OUT.nii.gz",
                help: "Also write per-voxel predictive entropy (nats) and, for an ensemble or --tta views, mutual "
                    + "information (/entropy, /mutual_information; NIfTI: a second volume), in the labels' geometry."),
            OptionSpec(
                "probabilities", .flag,
                help: "Also write /probabilities [frames, classes, H, W] (before post-processing)."),
            regularizeOption(
                help: "Post-processing: crf and mrf use the class probabilities, the others the labels; "
                    + "a multi-frame input is post-processed as one volume. auto: what train --fold all --post auto "
                    + "chose on the cross-validation of the --model OUT/ folder (OUT/postprocessing.json)."),
            OptionSpec(
                "crf", valueName: "SPEC",
                help: "Dense CRF parameters for --regularize crf: "
                    + SegmentPostProcessing.CRFParameters.keys.map { "\($0)=…" }.joined(separator: ",") + "."),
            OptionSpec(
                "precision", .choice(of: Precision.self),
                help: "Arithmetic precision: a quantised checkpoint runs in int8, others in fp32; bf16 "
                    + "(bf16 convolutions) only where oneDNN's ISA has bf16 (AVX512_CORE_BF16, AMX).",
                default: "the checkpoint's"),
            OptionSpec("threads", .int(1...1024), help: "Compute threads.", default: "the machine's cores"),
            OptionSpec(
                "tile-size", .int(0...65536), valueName: "PIXELS",
                help: "Tiles of this many network pixels, blended by a Gaussian; 0 runs whole images (as the ONNX "
                    + "export does).",
                default: "the training crop at network scale, as nnU-Net tiles"),
            OptionSpec(
                "tile-step", .double(0.05...1), valueName: "F",
                help: "Distance between tiles as a fraction of the tile.", default: "0.5"),
            OptionSpec(
                "batch", .int(1...256),
                help: "Slices per forward pass (labels as with 1; memory holds N slices' logits).",
                default: "1"),
            OptionSpec(
                "timings", .flag,
                help:
                    "Print slices per second, achieved TFLOP/s or TOPS against the ISA's peak, peak RSS, and a "
                    + "roofline row per convolution (strategy, oneDNN kernel, time, bytes, memory or compute bound)."),
            maxMemoryOption,
            OptionSpec("weights", valueName: "W.safetensors", help: "Parity mode: a torchvision state_dict."),
            OptionSpec(
                "arch", .choice(of: Architecture.self),
                help: "Parity mode: the architecture."),
            OptionSpec("num-classes", .int(2...65535), help: "Parity mode: classes K."),
            OptionSpec("in-channels", .choice(["1", "3"]), help: "Parity mode: input channels C.", default: "3"),
            OptionSpec("aux", .flag, help: "Parity mode: the weights include the auxiliary FCN head."),
            OptionSpec(
                "raw-input", valueName: "IN.h5",
                help: "Parity mode (with --weights or --model): /image Float32 [N, C, H, W], fed untouched."),
            OptionSpec(
                "logits", valueName: "OUT.h5",
                help: "Parity mode (with --weights or --model): write /logits Float32 [N, K, H, W]."),
            OptionSpec(
                "crf-input", valueName: "IN.h5",
                help: "CRF parity mode: /probabilities [K, (D,) H, W] and /image [C, (D,) H, W] at 0–255."),
            OptionSpec("marginals", valueName: "OUT.h5", help: "CRF parity mode: write /marginals (with --crf).")
        ])

    static func run(_ arguments: ParsedArguments) throws {
        if arguments.choice("precision") as Precision? != nil, !arguments.has("model") {
            throw UsageError("slicelab segment: --precision needs --model MODEL.h5")
        }
        let models = try modelCheckpoints(arguments, command: "segment")
        if models.count > 1, arguments.has("weights") || arguments.has("raw-input") || arguments.has("crf-input") {
            throw UsageError("slicelab segment: the parity modes take one --model")
        }
        if let weights = arguments.string("weights") { return try runWeightsParity(arguments, weights: weights) }
        if let rawInput = arguments.string("raw-input") { return try runRawLogits(arguments, rawInput: rawInput) }
        if let crfInput = arguments.string("crf-input") { return try runCRFParity(arguments, crfInput: crfInput) }
        let (options, folderOutput, shard) = try segmentOptions(arguments, models: models)
        if folderOutput, let job = try cohortJob(arguments, command: "segment") {
            try runJob(arguments, options: options, job: job)
        } else if folderOutput {
            try runFolder(arguments, options: options, shard: shard)
        } else {
            try SegmentWorkflow.run(options, log: standardError)
        }
    }

    /// What a segmentation asks for, whether it is a folder of cases into a folder, and its shard.
    static func segmentOptions(
        _ arguments: ParsedArguments, models: [String]
    ) throws -> (SegmentWorkflow.Options, Bool, Shard?) {
        guard let input = arguments.positional(0), let model = models.first,
            let out = arguments.string("out")
        else {
            throw UsageError(
                "slicelab segment: give INPUT, --model MODEL.h5 and --out OUT.h5|OUT.nii.gz|OUT.png|OUT.dcm "
                    + "(or the parity options --weights … --raw-input … --logits …)")
        }
        // A folder of cases into a folder; one image into an output without a known ending keeps its error.
        var inputIsFolder: ObjCBool = false
        let folderOutput =
            (out.hasSuffix("/") || URL(fileURLWithPath: out).pathExtension.isEmpty)
            && FileManager.default.fileExists(atPath: input, isDirectory: &inputIsFolder) && inputIsFolder.boolValue
        let shard = try parseShard(arguments, command: "segment")
        if !folderOutput, shard != nil || arguments.flag("skip-bad") {
            throw UsageError("slicelab segment: --shard and --skip-bad need a folder of cases and --out FOLDER/")
        }
        var options = SegmentWorkflow.Options(
            input: input, model: model, output: out, overlay: arguments.string("overlay"),
            probabilities: arguments.flag("probabilities"),
            threads: arguments.int("threads"),
            limits: try readLimits(arguments, command: "segment"))
        // An unreadable model gets its own error from SegmentWorkflow.run; here only a readable one's context is compared.
        if let context = arguments.int("context"), FileManager.default.fileExists(atPath: model),
            let stored = try? SliceSampling.read(model).context, stored != context
        {
            throw UsageError(
                "slicelab segment: --context \(context) does not match the model's context \(stored) "
                    + "(\(model) was trained with --context \(stored))")
        }
        options.palette = arguments.choice("palette") ?? .distinct
        options.context = arguments.int("context")
        options.precision = arguments.choice("precision")
        options.batch = arguments.int("batch") ?? 1
        options.timings = arguments.flag("timings")
        options.ensemble = Array(models.dropFirst())
        options.augmentation = arguments.choice("tta")
        options.uncertainty = arguments.string("uncertainty")
        options.dicomOutput = arguments.choice("dicom-output") ?? .seg
        options.tileSize = arguments.int("tile-size")
        options.tileStep = arguments.double("tile-step") ?? 0.5
        if arguments.string("regularize") == "auto" {
            options.postProcessing = try storedPostProcessing(arguments.strings("model"))
        } else {
            options.postProcessing.pipeline = try regularizePipeline(arguments, command: "segment")
        }
        if arguments.string("crf") != nil, !options.postProcessing.pipeline.contains(.crf) {
            throw UsageError("slicelab segment: --crf needs --regularize crf")
        }
        options.postProcessing.crf = try crfParameters(arguments)
        return (options, folderOutput, shard)
    }

    /// `--regularize auto`: the choice `train --fold all --post auto` stored beside the fold models of a `--model
    /// OUT/` folder.
    static func storedPostProcessing(_ models: [String]) throws -> SegmentPostProcessing {
        let folders = models.filter {
            (try? URL(fileURLWithPath: $0).resourceValues(forKeys: [.isDirectoryKey]))?.isDirectory == true
        }
        for folder in folders {
            if let choice = try AutoPostProcessing.stored(in: folder) {
                standardError("segment: post-processing chosen on \(folder)'s cross-validation: \(choice.summary)")
                return choice.chosen
            }
        }
        throw UsageError(
            "slicelab segment: --regularize auto applies the choice train --fold all --post auto stores beside the "
                + "fold models (OUT/\(AutoPostProcessing.fileName)); "
                + (folders.isEmpty ? "no --model is such a folder" : "none in \(folders.joined(separator: ", "))"))
    }

    /// A folder of cases under an MPI launcher: each rank its shard, rank 0 merges.
    static func runJob(_ arguments: ParsedArguments, options: SegmentWorkflow.Options, job: Communicator) throws {
        let out = options.output
        try runAsRank(job, command: "segment") {
            let outcome = try ShardedJob.run(communicator: job, output: out, partSuffix: "") { shard, part in
                var mine = options
                mine.output = part
                _ = try SegmentWorkflow.runCohort(mine, shard: shard, skipBad: arguments.flag("skip-bad")) {
                    standardError("rank \(job.rank): \($0)")
                }
            } merge: { parts, output in
                // Overwriting, as one process replaces an earlier output.
                try SegmentationManifest.merge(parts: parts, output: output, overwrite: true)
            }
            if case .merged(let manifest) = outcome {
                reportMerge(manifest, output: out, shards: job.size, job: true)
            }
        }
    }

    /// A folder of cases (or one shard of it) into a folder.
    static func runFolder(_ arguments: ParsedArguments, options: SegmentWorkflow.Options, shard: Shard?) throws {
        let out = options.output
        let manifest = try SegmentWorkflow.runCohort(
            options, shard: shard, skipBad: arguments.flag("skip-bad"),
            log: standardError)
        print(
            "wrote \(manifest.cases.count) case(s) to \(out)" + (shard.map { " (shard \($0))" } ?? "")
                + (manifest.skipped.isEmpty ? "" : ", skipped \(manifest.skipped.count)"))
    }

    // MARK: - Parity modes

    /// torchvision weights on a raw input, for the parity tests.
    static func runWeightsParity(_ arguments: ParsedArguments, weights: String) throws {
        guard let architecture: Architecture = arguments.choice("arch"), let classes = arguments.int("num-classes"),
            let rawInput = arguments.string("raw-input"), let logits = arguments.string("logits")
        else {
            throw UsageError(
                "slicelab segment: parity mode needs --weights, --arch, --num-classes, --raw-input "
                    + "and --logits")
        }
        let notes = try SegmentWorkflow.parity(
            weights: weights, architecture: architecture, classCount: classes,
            inputChannels: arguments.int("in-channels") ?? 3,
            auxiliaryHead: arguments.flag("aux"), rawInput: rawInput,
            logitsPath: logits, threads: arguments.int("threads"), log: standardError)
        for note in notes { standardError("slicelab segment: \(note)") }
    }

    /// A checkpoint on a raw input, for the export parity tests.
    static func runRawLogits(_ arguments: ParsedArguments, rawInput: String) throws {
        guard let model = arguments.string("model"), let logits = arguments.string("logits") else {
            throw UsageError("slicelab segment: --raw-input needs --model MODEL.h5 (or --weights …) and --logits")
        }
        try SegmentWorkflow.rawLogits(
            model: model, rawInput: rawInput, logitsPath: logits,
            threads: arguments.int("threads"), precision: arguments.choice("precision"),
            timings: arguments.flag("timings"), log: standardError)
    }

    /// The dense CRF alone, for its parity test and benchmark.
    static func runCRFParity(_ arguments: ParsedArguments, crfInput: String) throws {
        guard let marginals = arguments.string("marginals") else {
            throw UsageError("slicelab segment: CRF parity mode needs --crf-input and --marginals")
        }
        let timing = try SegmentPostProcessing.crfParity(
            input: crfInput, output: marginals,
            parameters: try crfParameters(arguments))
        if ProcessInfo.processInfo.environment["SLICELAB_TIMINGS"] != nil {
            standardError("timing crf \(timing.seconds) cpu \(timing.cpuSeconds)")
        }
    }
}
