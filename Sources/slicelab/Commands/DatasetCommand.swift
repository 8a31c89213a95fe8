import Foundation
import SliceLabDatasets
import SliceLabKit

/// `slicelab dataset check PATH` and `slicelab dataset export PATH --format nnunet --out DIR --id N` (issue #18).
enum DatasetCommand: Command {
    static let spec = CommandSpec(
        name: "dataset",
        summary: "Check a labeled set (SliceLab, nnU-Net v2, Decathlon) or export it as an nnU-Net v2 raw set.",
        positionals: [
            PositionalSpec("ACTION", help: "check or export."),
            PositionalSpec("PATH", help: "The set's folder (with its dataset.json).")
        ],
        options: [
            OptionSpec("format", .choice(["nnunet"]), help: "export: the layout to write."),
            OptionSpec("out", valueName: "DIR", help: "export: DIR/DatasetNNN_<name>/ is written."),
            OptionSpec("id", .int(1...999), help: "export: the nnU-Net dataset id NNN."),
            foldOption, splitSeedOption, maxMemoryOption
        ],
        discussion: """
            check lists every problem by case (missing channel or label files, shapes or geometry that differ by more
            than 1e-4 between image and label, undeclared label values, channel counts) and exits 1 if there is one.
            """)

    static func run(_ arguments: ParsedArguments) throws {
        guard let action = arguments.positional(0), let path = arguments.positional(1) else {
            throw UsageError("slicelab dataset: give ACTION (check or export) and PATH")
        }
        let limits = try readLimits(arguments, command: "dataset")
        let selection = splitSelection(arguments)
        switch action {
        case "check":
            let report = try DatasetCheck.run(path, limits: limits, selection: selection)
            for line in report.lines.dropLast() { print(line) }
            print(report.lines.last ?? "")
            if !report.isClean {
                throw DatasetCheckFailed(count: report.setProblems.count + report.caseProblems.count)
            }
        case "export":
            guard arguments.string("format") == "nnunet", let out = arguments.string("out"),
                let id = arguments.int("id")
            else {
                throw UsageError("slicelab dataset export: give --format nnunet, --out DIR and --id N (1…999)")
            }
            var options = DatasetExport.Options(dataset: path, output: out, id: id)
            (options.limits, options.selection) = (limits, selection)
            print("wrote \(try DatasetExport.run(options))")
        default:
            throw UsageError("slicelab dataset: unknown action '\(action)'; choose check or export")
        }
    }
}

/// `dataset check` found problems (already printed): exit 1 with a one-line summary.
struct DatasetCheckFailed: Error, CustomStringConvertible {
    let count: Int
    var description: String { "\(count) problem(s) found" }
}

/// `--fold K`, for nnU-Net and Decathlon sets.
let foldOption = OptionSpec(
    "fold", .int(0...99),
    help: "nnU-Net/Decathlon sets: fold K of splits_final.json (or of the generated 5-fold split) trains; its val "
        + "cases are validated and scored (--split test or val).", default: "0")

/// `--split-seed S`, for nnU-Net and Decathlon sets without a splits file.
let splitSeedOption = OptionSpec(
    "split-seed", .int(0...Int(UInt32.max)),
    help: "nnU-Net/Decathlon sets without splits_final.json: the seed of the 5-fold split (12345 gives "
        + "nnU-Net's own folds); recorded in the results file.", default: "12345")

/// The split selection `--fold` and `--split-seed` ask for.
func splitSelection(_ arguments: ParsedArguments) -> SplitSelection {
    var selection = SplitSelection(
        fold: arguments.int("fold") ?? 0,
        seed: UInt64(arguments.int("split-seed") ?? Int(SplitSelection.nnUNetSeed)))
    selection.crossValidation = arguments.has("fold")
    return selection
}
