import Foundation
import SliceLabKit
import SliceLabResults

/// `slicelab evaluate --pred PRED --ref REF --out RESULTS.h5` (issue #7).
enum EvaluateCommand: Command {
    static let spec = CommandSpec(
        name: "evaluate",
        summary: "Compute segmentation metrics and write them to an HDF5 results file.",
        options: [
            OptionSpec("pred", valueName: "PRED", help: "Predicted label file or folder.", required: true),
            OptionSpec(
                "ref", valueName: "REF",
                help: "Reference label file or folder, or an nnU-Net/Decathlon set "
                    + "(its labelsTr, for the cases PRED holds).", required: true),
            OptionSpec("spacing", .doubles, valueName: "z,y,x", help: "Voxel spacing in mm where files carry none."),
            OptionSpec("num-classes", .int(2...65535), help: "Number of classes K.", default: "max label + 1"),
            OptionSpec("class-names", valueName: "a,b,c", help: "Class names."),
            OptionSpec(
                "tolerance", .double(0...Double.greatestFiniteMagnitude), valueName: "MM", help: "NSD tolerance in mm.",
                default: "1"),
            OptionSpec(
                "hd95", .choice(of: EvaluateWorkflow.HD95Definition.self), help: "HD95 definition.", default: "max"),
            OptionSpec(
                "empty", .choice(of: EvaluateWorkflow.EmptyRule.self),
                help: "Overlap metrics when both masks are empty.",
                default: "nan"),
            lesionClassesOption,
            OptionSpec(
                "prob", valueName: "PROB.h5|FOLDER",
                help: "The prediction's /probabilities [frames, K, H, W] (segment --probabilities), a file or a "
                    + "folder paired by stem: adds per-class calibration (ECE over 15 bins, Brier, NLL) and the "
                    + "AUROC of entropy as an error detector."),
            roiOption, overlapOption,
            OptionSpec(
                "ref-series", valueName: "SERIES",
                help: "The DICOM series a structure set (RTSTRUCT) reference lies on.",
                default: "the referenced series beside it"),
            OptionSpec("out", valueName: "RESULTS.h5", help: "Results file (runs are added).", required: true),
            OptionSpec("run", help: "Run name.", default: "the prediction's name"),
            OptionSpec("overwrite", .flag, help: "Replace a run of the same name."),
            shardOption,
            maxMemoryOption
        ])

    static func run(_ arguments: ParsedArguments) throws {
        guard let prediction = arguments.string("pred"), let reference = arguments.string("ref"),
            let output = arguments.string("out")
        else {
            throw UsageError("slicelab evaluate: --pred, --ref and --out are required")
        }
        let names = arguments.string("class-names").map {
            $0.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        }
        if let names, names.contains(where: \.isEmpty) {
            throw UsageError("slicelab evaluate: --class-names has an empty name")
        }
        var options = EvaluateWorkflow.Options(
            prediction: prediction, reference: reference, output: output, spacing: arguments.doubles("spacing"),
            classCount: arguments.int("num-classes"), classNames: names,
            toleranceMM: arguments.double("tolerance") ?? 1,
            hd95: arguments.choice("hd95") ?? .max,
            empty: arguments.choice("empty") ?? .nan,
            runName: arguments.string("run"), overwrite: arguments.flag("overwrite"))
        options.shard = try parseShard(arguments, command: "evaluate")
        options.lesionClasses = try lesionClasses(arguments, command: "evaluate")
        options.probabilities = arguments.string("prob")
        (options.roi, options.overlap, options.referenceSeries) = (
            arguments.string("roi"), arguments.choice("overlap"), arguments.string("ref-series")
        )
        do { _ = try options.labelReading() } catch { throw UsageError("slicelab evaluate: \(error)") }
        if let job = try cohortJob(arguments, command: "evaluate") {
            let limits = try readLimits(arguments, command: "evaluate")
            return try runAsRank(job, command: "evaluate") {
                let outcome = try ShardedJob.run(communicator: job, output: output, partSuffix: ".h5") {
                    shard, part in
                    var mine = options
                    (mine.shard, mine.output) = (shard, part)
                    _ = try EvaluateWorkflow.run(mine, limits: limits)
                } merge: { parts, output in
                    try ResultsMerge.merge(parts: parts, output: output, overwrite: options.overwrite)
                }
                if case .merged(let merged) = outcome {
                    merged.runs.first.map { print(TableText.summary($0)) }
                    reportMerge(merged, output: output, job: ("evaluate", job.size))
                }
            }
        }
        let run = try EvaluateWorkflow.run(options, limits: try readLimits(arguments, command: "evaluate"))
        print(TableText.summary(run))
        print("wrote run '\(run.name)' to \(output)")
    }
}
