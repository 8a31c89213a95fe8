import SliceLab

/// `slicelab demo`: the main job on the embedded data (issue #8).
enum DemoCommand: Command {
    static let spec = CommandSpec(
        name: "demo",
        summary: "Run the main job on the bundled data: segment, cluster, evaluate, compare, report.",
        options: [OptionSpec("out", valueName: "DIR", help: "Output folder.", default: "demo-output")])

    static func run(_ arguments: ParsedArguments) throws {
        throw notYetAvailable("demo", "issue #8")
    }
}
