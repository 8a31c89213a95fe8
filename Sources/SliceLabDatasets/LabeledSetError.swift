/// Errors of a labeled set (the format of Datasets/README.md): each names the set's `dataset.json` or the case,
/// and says what to fix.
public enum LabeledSetError: Error, CustomStringConvertible, Equatable {
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
        }
    }

    /// The case the error names, if any.
    public var caseName: String? {
        switch self {
        case .invalidDescription, .emptySplit, .classCountMismatch: return nil
        case .unpairedImage(let name, _), .unpairedLabel(let name, _), .missingCase(let name, _),
            .ambiguous(let name, _), .notInAnySplit(let name, _), .caseInTwoSplits(let name, _),
            .badCaseName(let name), .shapeMismatch(let name, _, _), .labelOutOfRange(let name, _, _, _),
            .unreadable(let name, _, _), .missingChannel(let name, _), .badChannelFileName(let name, _),
            .channelCount(let name, _, _), .geometryMismatch(let name, _, _):
            return name
        }
    }
}
