import SliceLabKit

/// `slicelab info PATH [--json] [--stats]` (issues #3, #18).
enum InfoCommand: Command {
    static let spec = CommandSpec(
        name: "info",
        summary: "Describe a DICOM file, a folder of series, or a NIfTI file.",
        positionals: [PositionalSpec("PATH", help: "A DICOM file, a folder (searched recursively), or a NIfTI file.")],
        options: [
            OptionSpec("json", .flag, help: "Print JSON for machines instead of text."),
            OptionSpec(
                "stats", .flag,
                help: "NIfTI: also read the voxels; print their min, max, mean and "
                    + "the read time."),
            maxMemoryOption
        ])

    static func run(_ arguments: ParsedArguments) throws {
        let path = arguments.positional(0) ?? ""
        let limits = try readLimits(arguments, command: "info")
        if let description = try InfoWorkflow.niftiDescription(
            path, limits: limits, json: arguments.flag("json"),
            statistics: arguments.flag("stats"))
        {
            return print(description)
        }
        if let description = try InfoWorkflow.labelFileDescription(path, limits: limits, json: arguments.flag("json")) {
            return print(description)
        }
        if arguments.flag("stats") {
            throw UsageError("slicelab info: --stats reads NIfTI voxels; \(path) is not a NIfTI file")
        }
        let report = try InfoWorkflow.report(path, limits: limits)
        print(arguments.flag("json") ? try InfoWorkflow.json(report) : InfoWorkflow.text(report))
    }
}
