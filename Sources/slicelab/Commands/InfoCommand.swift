import SliceLabKit

/// `slicelab info PATH [--json]` (issue #3).
enum InfoCommand: Command {
    static let spec = CommandSpec(
        name: "info",
        summary: "Describe a DICOM file or a folder of series.",
        positionals: [PositionalSpec("PATH", help: "A DICOM file or a folder (searched recursively).")],
        options: [OptionSpec("json", .flag, help: "Print JSON for machines instead of text."), maxMemoryOption])

    static func run(_ arguments: ParsedArguments) throws {
        let path = arguments.positional(0) ?? ""
        let report = try InfoWorkflow.report(path, limits: try readLimits(arguments, command: "info"))
        print(arguments.flag("json") ? try InfoWorkflow.json(report) : InfoWorkflow.text(report))
    }
}
