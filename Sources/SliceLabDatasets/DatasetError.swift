/// The errors of labeled sets, dataset layouts, evaluation pairs and shards: each names the set's `dataset.json`, the
/// case or the file, and says what to fix.
public enum DatasetError: Error, CustomStringConvertible, Equatable {
    // MARK: - Labeled sets and dataset layouts

    /// `dataset.json` or a folder of the set is missing or not valid (never skippable).
    case invalidDescription(file: String, reason: String)
    /// An image with no label file.
    case unpairedImage(case: String, file: String)
    /// A label file with no image.
    case unpairedLabel(case: String, file: String)
    /// A case listed in a split has neither image nor labels.
    case missingCase(case: String, split: String)
    /// More than one image form or label form for one case.
    case ambiguous(case: String, files: [String])
    /// A file whose case no split lists.
    case notInAnySplit(case: String, file: String)
    /// A case listed in two splits, or twice in one.
    case caseInTwoSplits(case: String, splits: [String])
    /// A case name outside `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`.
    case badCaseName(case: String)
    /// Image and labels of a case differ in shape (channels left out).
    case shapeMismatch(case: String, image: [Int], labels: [Int])
    /// A label value outside the set's classes, with the number of pixels holding it.
    case labelOutOfRange(case: String, value: Int, pixels: Int, classCount: Int)
    /// A file of a case cannot be read (its reason from the reader).
    case unreadable(case: String, file: String, reason: String)
    /// A model trained for another number of classes than the set has.
    case classCountMismatch(model: String, modelClasses: Int, dataset: String, datasetClasses: Int)
    /// With `skipBad`, a split that had cases has none left.
    case emptySplit(split: String)
    /// A channel file of a case is missing (nnU-Net: `{case}_{XXXX}`; or a file `dataset.json` lists).
    case missingChannel(case: String, file: String)
    /// An image file in nnU-Net's `imagesTr/` not named `{case}_{XXXX}{file_ending}`.
    case badChannelFileName(case: String, file: String)
    /// A case with another number of channels than the set declares.
    case channelCount(case: String, found: Int, expected: Int)
    /// Image and label files (or two channel files) of a case lie on different voxel grids (beyond 1e-4).
    case geometryMismatch(case: String, file: String, reason: String)

    // MARK: - Evaluation pairs

    /// A file in one folder has no partner of the same stem in the other.
    case unpairedFiles(predictionsWithoutReference: [String], referencesWithoutPrediction: [String])
    /// Two files in one folder share a stem ("a.png" and "a.h5").
    case duplicateStem(folder: String, stem: String)
    /// A folder holds no label file.
    case noLabelFiles(folder: String)
    /// One of PRED/REF is a folder and the other a file.
    case mixedInputs(prediction: String, reference: String)
    /// The prediction and reference of a case differ in shape.
    case pairShapeMismatch(case: String, reference: [Int], prediction: [Int])
    /// Options that contradict each other (class names against --num-classes, bad spacing).
    case invalidOption(String)

    // MARK: - Shards

    /// `--shard` is not `I/N` with 0 ≤ I < N.
    case invalidShard(text: String)
    /// More shards than cases: some shard would have none.
    case moreShardsThanCases(shards: Int, cases: Int)
    /// An option that needs every case at once (a report) was combined with `--shard`.
    case notShardable(option: String, command: String)
    /// A part file has no `/shard` record (not written with `--shard`).
    case notAPart(file: String)
    /// Two parts come from runs with different configurations (or commands).
    case configurationMismatch(file: String, other: String, reason: String)
    /// A shard index appears in two parts.
    case duplicateShard(index: Int, files: [String])
    /// Some shards of the run are not among the parts.
    case missingShards(indices: [Int], count: Int)
    /// A part's cases are not those its shard should hold.
    case inconsistentPart(file: String, reason: String)
    /// The output is one of the parts, or exists without `--overwrite`.
    case outputExists(file: String)

    public var description: String {
        switch self {
        case .invalidDescription(let file, let reason): return "\(file): \(reason)"
        case .unpairedImage(let name, let file): return "case \(name): unpaired image: \(file) has no label in labels/"
        case .unpairedLabel(let name, let file): return "case \(name): unpaired label: \(file) has no image in images/"
        case .missingCase(let name, let split):
            return "case \(name): missing case: listed in split \"\(split)\" but has no image and no label"
        case .ambiguous(let name, let files):
            return "case \(name): ambiguous: more than one image or label form (\(files.joined(separator: ", ")))"
        case .notInAnySplit(let name, let file): return "case \(name): not in any split: \(file)"
        case .caseInTwoSplits(let name, let splits):
            return "case \(name): listed more than once (splits \(splits.joined(separator: ", "))); a case belongs "
                + "to one split"
        case .badCaseName(let name):
            return "case \(name): bad case name (expected [A-Za-z0-9][A-Za-z0-9._-]{0,127})"
        case .shapeMismatch(let name, let image, let labels):
            return "case \(name): shape mismatch: image \(image), labels \(labels)"
        case .labelOutOfRange(let name, let value, let pixels, let classCount):
            return "case \(name): label outside classes: value \(value) in \(pixels) pixels, classes are "
                + "0…\(classCount - 1)"
        case .unreadable(let name, let file, let reason): return "case \(name): unreadable: \(file): \(reason)"
        case .classCountMismatch(let model, let modelClasses, let dataset, let datasetClasses):
            return "\(model): the model has \(modelClasses) classes but \(dataset) has \(datasetClasses)"
        case .emptySplit(let split): return "split \"\(split)\" has no usable case left after skipping bad cases"
        case .missingChannel(let name, let file): return "case \(name): missing channel file: \(file)"
        case .badChannelFileName(let name, let file):
            return "case \(name): bad image file name: \(file) (nnU-Net names images {case}_{XXXX}{file_ending})"
        case .channelCount(let name, let found, let expected):
            return "case \(name): \(found) channels where dataset.json declares \(expected)"
        case .geometryMismatch(let name, let file, let reason):
            return "case \(name): geometry mismatch: \(file): \(reason)"
        case .unpairedFiles(let predictions, let references):
            var parts: [String] = []
            if !predictions.isEmpty {
                parts.append("predictions without a reference: \(predictions.joined(separator: ", "))")
            }
            if !references.isEmpty {
                parts.append("references without a prediction: \(references.joined(separator: ", "))")
            }
            return "unpaired cases (files are paired by name without extension): " + parts.joined(separator: "; ")
        case .duplicateStem(let folder, let stem):
            return "\(folder): more than one label file named '\(stem)' (with different extensions)"
        case .noLabelFiles(let folder): return "\(folder): no label files (.png, .h5, .hdf5, .dcm)"
        case .mixedInputs(let prediction, let reference):
            return "--pred \(prediction) and --ref \(reference) must both be files or both be folders"
        case .pairShapeMismatch(let name, let reference, let prediction):
            return "case '\(name)': reference shape \(reference) but prediction shape \(prediction)"
        case .invalidOption(let message): return message
        case .invalidShard(let text):
            return "--shard \(text): expected I/N with N ≥ 1 and 0 ≤ I < N (shards are numbered from 0)"
        case .moreShardsThanCases(let shards, let cases):
            return "\(shards) shards for \(cases) case(s): use at most \(cases) shards"
        case .notShardable(let option, let command):
            return "\(command) --shard: \(option) needs every case at once; leave it out of sharded runs"
        case .notAPart(let file):
            return "\(file): not a shard's part (no /shard record); write parts with --shard I/N"
        case .configurationMismatch(let file, let other, let reason):
            return "\(file) and \(other) come from different runs: \(reason)"
        case .duplicateShard(let index, let files):
            return "shard \(index) is given twice: \(files.joined(separator: " and "))"
        case .missingShards(let indices, let count):
            return "missing shard(s) \(indices.map(String.init).joined(separator: ", ")) of \(count)"
        case .inconsistentPart(let file, let reason):
            return "\(file): \(reason)"
        case .outputExists(let file):
            return "\(file): already exists (or is a part); pass --overwrite to replace it"
        }
    }

    /// The case the error names, if a labeled set may skip that case.
    public var caseName: String? {
        switch self {
        case .unpairedImage(let name, _), .unpairedLabel(let name, _), .missingCase(let name, _),
            .ambiguous(let name, _), .notInAnySplit(let name, _), .caseInTwoSplits(let name, _),
            .badCaseName(let name), .shapeMismatch(let name, _, _), .labelOutOfRange(let name, _, _, _),
            .unreadable(let name, _, _), .missingChannel(let name, _), .badChannelFileName(let name, _),
            .channelCount(let name, _, _), .geometryMismatch(let name, _, _):
            return name
        default:  // the set's own problems, an evaluation pair's and a shard's are never one skippable case's
            return nil
        }
    }
}
