import SliceLabKit

/// `slicelab quantize MODEL.h5 --calibrate DATASET --out MODEL-int8.h5` (issue #19).
enum QuantizeCommand: Command {
    static let spec = CommandSpec(
        name: "quantize",
        summary: "Quantise a checkpoint to int8 with calibration slices from a labeled set.",
        positionals: [PositionalSpec("MODEL.h5", help: "A float32 SliceLab checkpoint.")],
        options: [
            OptionSpec(
                "calibrate", valueName: "DATASET", help: "A labeled-set folder to calibrate on.", required: true),
            OptionSpec("split", help: "The split whose cases calibrate.", default: "train"),
            OptionSpec(
                "cases", .int(1...1_000_000), help: "Cases from the split's start.",
                default: "all (at most \(QuantizeWorkflow.defaultSliceLimit) slices, evenly spaced)"),
            OptionSpec(
                "method", .choice(of: CalibrationMethod.self), help: "How activation ranges are chosen.",
                default: QuantizeWorkflow.defaultMethod.rawValue),
            OptionSpec("out", valueName: "MODEL-int8.h5", help: "The quantised checkpoint.", required: true),
            OptionSpec(
                "calibration-inputs", valueName: "SLICES.h5",
                help: "Also write the calibration slices as fed to the network, /calibration/NNNN "
                    + "[1, C, H, W] (for peers calibrating on the same data)."),
            OptionSpec("threads", .int(1...1024), help: "Compute threads.", default: "the machine's cores"),
            maxMemoryOption
        ],
        discussion: """
            Batch norm is folded into the convolutions, weights get one s8 scale per output channel, and each
            convolution's input a u8 (after ReLU) or s8 scale from the calibration slices; the classifiers stay
            float32. The scales, method and calibration set go into the checkpoint's /quantization group, and
            segment and compare then run it in int8.
            """)

    static func run(_ arguments: ParsedArguments) throws {
        guard let model = arguments.positional(0), let dataset = arguments.string("calibrate"),
            let out = arguments.string("out")
        else {
            throw UsageError("slicelab quantize: give MODEL.h5, --calibrate DATASET and --out MODEL-int8.h5")
        }
        var options = QuantizeWorkflow.Options(model: model, dataset: dataset, output: out)
        options.split = arguments.string("split") ?? "train"
        options.cases = arguments.int("cases")
        options.method = arguments.choice("method") ?? QuantizeWorkflow.defaultMethod
        options.threads = arguments.int("threads")
        options.calibrationInputs = arguments.string("calibration-inputs")
        options.limits = try readLimits(arguments, command: "quantize")
        try QuantizeWorkflow.run(options, log: standardError)
        print("wrote \(out)")
    }
}
