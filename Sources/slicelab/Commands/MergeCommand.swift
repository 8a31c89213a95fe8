import Foundation
import SliceLabKit
import SliceLabResults

/// `slicelab merge PART… --out RESULTS.h5`: the parts of a sharded `compare` or `evaluate` joined (issue #20).
enum MergeCommand: Command {
    static let spec = CommandSpec(
        name: "merge",
        summary: "Join the parts of a sharded compare, evaluate or segment into one results file or folder.",
        positionals: [
            PositionalSpec(
                "PART",
                help: "A part (results file, or segment's folder) written with --shard "
                    + "I/N; give every shard once.", variadic: true)
        ],
        options: [
            OptionSpec(
                "out", valueName: "RESULTS.h5|FOLDER",
                help: "The merged results file or folder (written "
                    + "atomically).", required: true),
            OptionSpec("overwrite", .flag, help: "Replace an existing RESULTS.h5.")
        ],
        discussion: """
            The parts must come from one run (same command, options, cases and split into the same number of
            shards). Cases are ordered as one process orders them; metrics are copied bit for bit; summaries,
            bootstrap intervals and comparisons are computed once over all cases. Cases a shard skipped as bad
            (--skip-bad) are listed again here, as one process lists them.
            """)

    static func run(_ arguments: ParsedArguments) throws {
        guard let output = arguments.string("out"), !arguments.positionals.isEmpty else {
            throw UsageError("slicelab merge: give the parts PART… and --out RESULTS.h5")
        }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: arguments.positionals[0], isDirectory: &isFolder), isFolder.boolValue
        {
            reportMerge(
                try SegmentationManifest.merge(
                    parts: arguments.positionals, output: output,
                    overwrite: arguments.flag("overwrite")),
                output: output, shards: arguments.positionals.count)
            return
        }
        reportMerge(
            try ResultsMerge.merge(
                parts: arguments.positionals, output: output, overwrite: arguments.flag("overwrite")),
            output: output)
    }
}
