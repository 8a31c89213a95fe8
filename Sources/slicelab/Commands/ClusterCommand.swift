import Foundation
import SliceLabIO
import SliceLabInference
import SliceLabKit

/// `slicelab cluster INPUT --method … --classes K --space … --out OUT` (issue #6).
enum ClusterCommand: Command {
    static let spec = CommandSpec(
        name: "cluster",
        summary: "Segment with the classical baseline: color-space clustering and region labelling.",
        positionals: [PositionalSpec("INPUT", help: "DICOM file or series folder, PNG, or HDF5 with /image.")],
        options: [
            OptionSpec(
                "method", .choice(of: ClusterMethod.self),
                help: "How classes are built.", required: true),
            OptionSpec("classes", .int(2...255), help: "Number of classes K.", required: true),
            OptionSpec(
                "space", .choice(of: ClusterSpace.self),
                help: "Color space the pixels are points in.", default: "gray"),
            OptionSpec("seed", .int(), help: "Random seed.", default: "0"),
            OptionSpec("n-init", .int(1...1000), help: "Restarts for kmeans/gmm.", default: "10"),
            regularizeOption(help: "Smoothing after labelling."),
            OptionSpec("min-region", .int(0...Int.max), help: "Merge regions smaller than N pixels.", default: "0"),
            OptionSpec(
                "connectivity", .choice(["1", "2"]), help: "Region connectivity (1: 4/6, 2: 8/26).",
                default: "1"),
            OptionSpec("out", valueName: "OUT.h5|OUT.png", help: "Label map output.", required: true),
            OptionSpec("overlay", valueName: "OVERLAY.png", help: "The image with each class tinted."),
            paletteOption,
            maxMemoryOption
        ])

    /// The library's option error in the command line's words, naming the flags.
    static func usage(_ error: InferenceError) -> String {
        switch error {
        case .colorSpaceNeedsColor(let space, let file):
            return "--space \(space.rawValue) needs a color image, but \(file) is gray; use --space gray"
        case .noLightnessChannel(let method, let space):
            return "--method \(method.rawValue) thresholds one channel; --space \(space.rawValue) has no lightness "
                + "channel (use gray, lab, hsv or ycbcr)"
        case .tooFewClasses(let method): return "--method \(method.rawValue) needs --classes ≥ 2"
        case .otsuMakesTwoClasses(let classes):
            return "--method otsu makes 2 classes; use --method multiotsu for --classes \(classes)"
        case .regularizerNeedsProbabilities(let step):
            return "--regularize \(step) works on a model's class probabilities; a classical method has labels "
                + "only (use none, majority, mrf, largest-component or fill-holes)"
        case .invalidClassicalSpec, .needsProbabilities, .unknownStep, .ensembleMismatch, .invalidPostProcessingChoice:
            return "\(error)"
        }
    }

    static func run(_ arguments: ParsedArguments) throws {
        guard let input = arguments.positional(0), let out = arguments.string("out"),
            let method: ClusterMethod = arguments.choice("method"), let classes = arguments.int("classes")
        else {
            throw UsageError("slicelab cluster: INPUT, --method, --classes and --out are required")
        }
        let options = ClusterOptions(
            method: method, classes: classes, space: arguments.choice("space") ?? .gray,
            seed: arguments.int("seed") ?? 0, initCount: arguments.int("n-init") ?? 10,
            regularize: try regularizePipeline(arguments, command: "cluster"),
            minRegion: arguments.int("min-region") ?? 0,
            connectivity: arguments.int("connectivity") ?? 1)
        let outcome: ClusterOutcome
        do {
            outcome = try ClusterWorkflow.run(
                input: input, options: options, out: out,
                overlay: arguments.string("overlay"), palette: arguments.choice("palette") ?? .distinct,
                limits: try readLimits(arguments, command: "cluster"))
        } catch let error as InferenceError {
            throw UsageError("slicelab cluster: " + Self.usage(error))
        }
        // Hidden: per-stage seconds on stderr for Benchmarks/bench_classical.py.
        if ProcessInfo.processInfo.environment["SLICELAB_TIMINGS"] != nil {
            for (stage, seconds) in outcome.timings { standardError("timing \(stage) \(seconds)") }
        }
        print(
            "cluster: \(outcome.shape.dimensions.map(String.init).joined(separator: "x")) \(method.rawValue) "
                + "K=\(classes) → \(outcome.regionCount) regions → \(out)")
    }
}
