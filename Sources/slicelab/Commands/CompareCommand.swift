import SliceLab

/// `slicelab compare DATASET --model MODEL.h5 [--classical SPEC]… --out RESULTS.h5` (issue #8).
enum CompareCommand: Command {
    static let spec = CommandSpec(
        name: "compare",
        summary: "Run DeepLabV3 and classical baselines on a labeled set, evaluate and compare them.",
        positionals: [PositionalSpec("DATASET", help: "A labeled-set folder (images/, labels/, dataset.json).")],
        options: [
            OptionSpec("model", valueName: "MODEL.h5", help: "A SliceLab checkpoint.", required: true),
            OptionSpec("classical", valueName: "SPEC", help: "e.g. kmeans:space=gray,classes=3,map=train-vote",
                       repeatable: true),
            OptionSpec("split", help: "Split to evaluate.", default: "test"),
            OptionSpec("out", valueName: "RESULTS.h5", help: "Results file.", required: true),
            OptionSpec("report", valueName: "DIR", help: "Write an HTML report into DIR."),
            OptionSpec("threads", .int(1...1024), help: "Compute threads.", default: "the machine's cores"),
            OptionSpec("timings", .flag, help: "Print a timing breakdown."),
            OptionSpec("skip-bad", .flag, help: "Skip and list invalid cases instead of failing."),
        ])

    static func run(_ arguments: ParsedArguments) throws {
        throw notYetAvailable("compare", "labeled sets and comparison, issue #8")
    }
}
