import Foundation
import Metrics
import SliceLabIO
import SliceLabInference
import SliceLabKit
import SliceLabResults

// What several commands share: checks of their common options and the lines a merge prints.

/// Refuses (a usage error naming the reason) a precision the checkpoint cannot run in.
func checkPrecision(_ precision: Precision, model: String, command: String) throws {
    if let problem = try precision.problem(model: model) {
        throw UsageError("slicelab \(command): --precision \(precision.rawValue): \(problem)")
    }
}

/// `--palette`: the overlay's colours.
let paletteOption = OptionSpec(
    "palette", .choice(of: Overlay.Palette.self),
    help: "The overlay's colours: distinct (matplotlib's tab10) or hue30 (hue = class / 30, the original demo's).",
    default: "distinct")

/// `--regularize STEP[,STEP…]`: registered post-processing steps, applied in turn.
func regularizeOption(help: String) -> OptionSpec {
    OptionSpec(
        "regularize", valueName: "STEP[,STEP…]",
        help: help + " Steps: " + PostProcessingStepName.allCases.map(\.rawValue).joined(separator: ", ")
            + "; several run in turn (largest-component,fill-holes).",
        default: "none")
}

/// The steps `--regularize` names (none without it); an unknown step is a usage error listing the steps.
func regularizePipeline(_ arguments: ParsedArguments, command: String) throws -> PostProcessingPipeline {
    guard let text = arguments.string("regularize") else { return .none }
    do { return try PostProcessingPipeline(parsing: text) } catch {
        throw UsageError("slicelab \(command): --regularize \(text): \(error)")
    }
}

/// `--crf SPEC` parsed (the defaults without it); a bad spec is a usage error.
func crfParameters(
    _ arguments: ParsedArguments,
    command: String = "segment"
) throws -> SegmentPostProcessing.CRFParameters {
    guard let spec = arguments.string("crf") else { return SegmentPostProcessing().crf }
    do {
        return try SegmentPostProcessing.CRFParameters(parsing: spec)
    } catch {
        throw UsageError("slicelab \(command): --crf: \(error)")
    }
}

/// Prints what a merge wrote: for `slicelab merge` (`job` nil) or for rank 0 of an MPI job of `command`.
func reportMerge(_ outcome: ResultsMerge.Outcome, output: String, job: (command: String, ranks: Int)? = nil) {
    for skipped in outcome.skipped {
        standardError("slicelab \(job?.command ?? "merge"): skipped \(skipped.name): \(skipped.reason)")
    }
    print(
        "merged \(job.map { "\($0.ranks) ranks" } ?? "\(outcome.record.shard.count) shards"): \(outcome.runs.count) "
            + "run(s) of \(outcome.record.caseOrder.count) cases, \(outcome.comparisons.count) comparison(s) into \(output)"
    )
}

/// Prints what a merge of segmented folders wrote: for `slicelab merge`, or for rank 0 of an MPI job (`job`).
func reportMerge(_ manifest: SegmentationManifest, output: String, shards: Int, job: Bool = false) {
    for skipped in manifest.skipped {
        standardError("slicelab \(job ? "segment" : "merge"): skipped \(skipped.name): \(skipped.reason)")
    }
    print("merged \(shards) \(job ? "ranks" : "shards"): \(manifest.cases.count) segmented case(s) into \(output)")
}

/// `--lesion-classes a,b`: classes also scored lesion by lesion.
let lesionClassesOption = OptionSpec(
    "lesion-classes", valueName: "a,b",
    help: "Also score these classes (names or label values) lesion by lesion: BraTS lesion-wise Dice and HD95, "
        + "detection sensitivity, precision, F1, panoptic quality.",
    default: "the dataset's lesion_classes")

/// The classes `--lesion-classes` names, or nil without it; an empty name is a usage error.
func lesionClasses(_ arguments: ParsedArguments, command: String) throws -> [String]? {
    guard let text = arguments.string("lesion-classes") else { return nil }
    let names = text.split(separator: ",", omittingEmptySubsequences: false).map {
        $0.trimmingCharacters(in: .whitespaces)
    }
    guard !names.contains(where: \.isEmpty) else {
        throw UsageError("slicelab \(command): --lesion-classes has an empty name")
    }
    return names
}

/// `--model`, repeatable: one checkpoint, or several (a folder stands for its fold models) averaged as an ensemble.
func modelOption(required: Bool = false) -> OptionSpec {
    OptionSpec(
        "model", valueName: "MODEL.h5",
        help: "A SliceLab checkpoint; given again, or a folder of fold models (fold_K/model.h5), an ensemble whose "
            + "softmax outputs are averaged (members must agree on classes and preprocessing).",
        required: required, repeatable: true)
}

/// The checkpoints `--model` names, folders expanded to their fold models; a precision each must run in.
func modelCheckpoints(_ arguments: ParsedArguments, command: String) throws -> [String] {
    let models = try VolumeSegmenter.checkpoints(arguments.strings("model"))
    if let precision: Precision = arguments.choice("precision") {
        for model in models { try checkPrecision(precision, model: model, command: command) }
    }
    return models
}

/// `--tta`: test-time augmentation (`compare` takes it again for further runs).
func ttaOption(repeatable: Bool = false) -> OptionSpec {
    OptionSpec(
        "tta", .choice(of: TestTimeAugmentation.self),
        help: "Test-time augmentation, softmax averaged in the slice's frame: mirror flips along the in-plane axes "
            + "the model was trained to flip (2–4 views), mirror+scale also at 0.9 and 1.1 × the grid."
            + (repeatable
                ? " Given again: the same models with each further choice too, as run deeplabv3.tta-NAME." : ""),
        repeatable: repeatable, default: "mirror for an ensemble or a 2.5-D model, none for one 2-D model")
}

/// `--roi PATTERN=LABEL,…`: how named structures (RT Structure Set ROIs, Slicer segments) become classes.
let roiOption = OptionSpec(
    "roi", valueName: "PATTERN[|PATTERN…]=LABEL,…",
    help: "Named structures (Slicer segments, RTSTRUCT ROIs) to classes by shell pattern, case-insensitive: "
        + "\"GTV*=1,Lung_L|Lung_R=2\"; unmatched ones are left out.",
    default: "the set's class names, else one class per structure in file order")

/// `--overlap later|error`.
let overlapOption = OptionSpec(
    "overlap", .choice(of: StructureMapping.Overlap.self),
    help: "Where structures overlap: later (the higher class wins) or error.", default: "later")

/// The label reading options `--roi` and `--overlap` give (`classNames` from a set's `dataset.json` when there is
/// no `--roi`).
func labelReadingOptions(_ arguments: ParsedArguments, command: String, classNames: [String]? = nil) throws
    -> LabelReadingOptions
{
    let overlap = arguments.choice("overlap") ?? StructureMapping.Overlap.later
    var options = LabelReadingOptions(mapping: StructureMapping(overlap: overlap))
    if let text = arguments.string("roi") {
        do { options.mapping = try StructureMapping(parsing: text, overlap: overlap) } catch {
            throw UsageError("slicelab \(command): \(error)")
        }
    } else if let classNames {
        options.mapping.rule = .classNames(classNames)
    }
    return options
}

/// `--dicom-output seg|rtstruct`: what a `.dcm` label output is.
let dicomOutputOption = OptionSpec(
    "dicom-output", .choice(of: SegmentationExport.DICOMOutput.self),
    help: "A .dcm output as a binary DICOM SEG or as an RT Structure Set of contours traced per slice (one ROI per "
        + "class, named and coloured from the class table).", default: "seg")
