import Foundation
import SliceLabInference
import SliceLabKit
import SliceLabResults

/// `slicelab compare DATASET --model MODEL.h5 [--classical SPEC]… --out RESULTS.h5` (issue #8).
enum CompareCommand: Command {
    static let spec = CommandSpec(
        name: "compare",
        summary: "Run DeepLabV3 and classical baselines on a labeled set, evaluate and compare them.",
        positionals: [
            PositionalSpec(
                "DATASET",
                help: "A labeled-set folder: SliceLab's (images/, labels/, "
                    + "dataset.json), nnU-Net v2 raw or the Decathlon's.")
        ],
        options: [
            modelOption(required: true),
            ttaOption(repeatable: true),
            OptionSpec(
                "members", .flag,
                help: "With an ensemble (--model given again, or OUT/): also each member alone, without test-time "
                    + "augmentation, as run deeplabv3.fold_K (or the file's name), paired with the ensemble."),
            OptionSpec(
                "classical", valueName: "SPEC", help: "e.g. kmeans:space=gray,classes=3,map=train-vote",
                repeatable: true),
            OptionSpec("split", help: "Split to evaluate.", default: "test"),
            OptionSpec("out", valueName: "RESULTS.h5", help: "Results file.", required: true),
            OptionSpec("report", valueName: "DIR", help: "Write an HTML report into DIR."),
            OptionSpec("threads", .int(1...1024), help: "Compute threads.", default: "the machine's cores"),
            OptionSpec(
                "post", valueName: "STEP[,STEP…]",
                help: "Also run the model with post-processing STEP (\(ComparePost.names.joined(separator: ", "))) "
                    + "as run deeplabv3.STEP; several steps run in turn (largest-component,fill-holes); auto "
                    + "picks component rules per class on the val split.",
                repeatable: true),
            OptionSpec("crf", valueName: "SPEC", help: "Dense CRF parameters for --post crf."),
            OptionSpec(
                "precision", .choice(of: Precision.self),
                help: "Arithmetic precision: a quantised checkpoint runs in int8, others in fp32; bf16 "
                    + "(bf16 convolutions) only where oneDNN's ISA has bf16 (AVX512_CORE_BF16, AMX).",
                default: "the checkpoint's"),
            lesionClassesOption,
            OptionSpec("timings", .flag, help: "Print a timing breakdown."),
            OptionSpec("skip-bad", .flag, help: "Skip and list invalid cases instead of failing."),
            OptionSpec("overwrite", .flag, help: "Replace runs of the same names in RESULTS.h5."),
            OptionSpec(
                "predictions", valueName: "DIR",
                help: "Write each run's label volumes as DIR/<run>/<case><file ending> in the set's format."),
            OptionSpec(
                "external", valueName: "NAME=FOLDER",
                help: "Add run NAME from another tool's label files FOLDER/<case><file ending> (nnU-Net, "
                    + "MONAI), scored with the same metrics and paired tests.", repeatable: true),
            shardOption, foldOption, splitSeedOption,
            maxMemoryOption
        ],
        discussion: """
            SPEC is METHOD[:key=value,…] with METHOD one of otsu, multiotsu, histogram, kmeans, fcm, gmm and keys
            space, classes, map (train-vote: majority vote learned on the train split, the default;
            intensity: cluster i is class i; oracle: Hungarian matching on each evaluated case, an upper bound),
            seed, n-init, regularize, min-region, connectivity, name.
            Without --classical: \(CompareWorkflow.defaultClassical.joined(separator: " and ")).
            """)

    static func run(_ arguments: ParsedArguments) throws {
        let models = try modelCheckpoints(arguments, command: "compare")
        guard let dataset = arguments.positional(0), let model = models.first,
            let output = arguments.string("out")
        else {
            throw UsageError("slicelab compare: give DATASET, --model MODEL.h5 and --out RESULTS.h5")
        }
        let specs =
            arguments.strings("classical").isEmpty ? CompareWorkflow.defaultClassical : arguments.strings("classical")
        let classical: [ClassicalSpec]
        do { classical = try specs.map(ClassicalSpec.init) } catch let error as InferenceError {
            throw UsageError("slicelab compare: --classical \(error)")
        }
        var options = CompareWorkflow.Options(
            dataset: dataset, model: model, classical: classical,
            split: arguments.string("split") ?? "test", output: output,
            report: arguments.string("report"), threads: arguments.int("threads"),
            skipBad: arguments.flag("skip-bad"), overwrite: arguments.flag("overwrite"))
        options.limits = try readLimits(arguments, command: "compare")
        options.precision = arguments.choice("precision")
        options.lesionClasses = try lesionClasses(arguments, command: "compare")
        options.ensemble = Array(models.dropFirst())
        let augmentations = arguments.strings("tta").compactMap(TestTimeAugmentation.init(rawValue:))
        (options.augmentation, options.moreAugmentations) = (augmentations.first, Array(augmentations.dropFirst()))
        options.members = arguments.flag("members")
        if options.members && models.count < 2 {
            throw UsageError("slicelab compare: --members runs each member of an ensemble: give --model again or OUT/")
        }
        options.selection = splitSelection(arguments)
        options.predictions = arguments.string("predictions")
        options.external = try arguments.strings("external").map { text in
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex,
                text.index(after: equals) != text.endIndex
            else {
                throw UsageError("slicelab compare: --external takes NAME=FOLDER, not '\(text)'")
            }
            return (String(text[..<equals]), String(text[text.index(after: equals)...]))
        }
        options.shard = try parseShard(arguments, command: "compare")
        let job = try cohortJob(arguments, command: "compare")
        if options.shard != nil || job != nil, options.report != nil {
            throw UsageError(
                "slicelab compare: --report needs every case; write it from a single run, not with --shard "
                    + "or under mpirun")
        }
        options.post = try arguments.strings("post").map { text in
            guard let post = ComparePost(text) else {
                throw UsageError(
                    "slicelab compare: unknown --post '\(text)'; choose from "
                        + ComparePost.names.joined(separator: ", "))
            }
            return post
        }
        if arguments.string("crf") != nil, !options.post.contains(where: { $0.contains(.crf) }) {
            throw UsageError("slicelab compare: --crf needs --post crf")
        }
        options.crf = try crfParameters(arguments, command: "compare")
        if let job {
            return try runAsRank(job, command: "compare") {
                let outcome = try ShardedJob.run(communicator: job, output: options.output, partSuffix: ".h5") {
                    shard, part in
                    var mine = options
                    (mine.shard, mine.output) = (shard, part)
                    _ = try CompareWorkflow.run(mine)
                } merge: { parts, output in
                    try ResultsMerge.merge(parts: parts, output: output, overwrite: options.overwrite)
                }
                if case .merged(let merged) = outcome {
                    reportMerge(merged, output: options.output, job: ("compare", job.size))
                }
            }
        }
        try runCompare(options, timings: arguments.flag("timings"))
    }

    /// Runs a comparison and prints its table, skips, timings and outputs.
    static func runCompare(_ options: CompareWorkflow.Options, timings: Bool) throws {
        let outcome: CompareWorkflow.Outcome
        do {
            outcome = try CompareWorkflow.run(options)
        } catch let error as InferenceError {
            if case .ensembleMismatch = error { throw error }
            throw UsageError("slicelab compare: --classical: \(error)")  // a specification these images cannot take
        }
        for note in outcome.notes { standardError("slicelab compare: \(note)") }
        for skipped in outcome.skipped { standardError("slicelab compare: skipped \(skipped.name): \(skipped.error)") }
        print(CompareWorkflow.table(outcome), terminator: "")
        if timings {
            let total = outcome.timings.map(\.seconds).reduce(0, +)
            for (stage, seconds) in outcome.timings {
                let label = stage.padding(toLength: max(36, stage.count + 1), withPad: " ", startingAt: 0)
                print("  " + label + String(format: "%8.2f s  %5.1f %%", seconds, 100 * seconds / max(total, 1e-9)))
            }
        }
        if let shard = options.shard {
            print(
                "wrote shard \(shard) (\(outcome.runs.first?.caseCount ?? 0) cases) of \(outcome.runs.count) runs to "
                    + "\(options.output); join the parts with 'slicelab merge'")
            return
        }
        print(
            "wrote \(outcome.runs.count) runs to \(options.output)"
                + (options.report.map { ", report in \($0)/index.html" } ?? ""))
    }
}
