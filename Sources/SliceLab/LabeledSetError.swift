/// Errors of a labeled set (issue #8's format): each names the set folder or the case and says what to fix.
public enum LabeledSetError: Error, CustomStringConvertible, Equatable {
    /// `dataset.json` is missing or not valid.
    case invalidDescription(file: String, reason: String)
    /// An image with no label file.
    case unpairedImage(case: String, file: String)
    /// A label file with no image.
    case unpairedLabel(case: String, file: String)
    /// A case listed in a split has no image.
    case missingCase(case: String, split: String)
    /// A case listed in two splits.
    case caseInTwoSplits(case: String, splits: [String])
    /// Image and labels of a case differ in height or width.
    case shapeMismatch(case: String, image: [Int], labels: [Int])
    /// A label value outside the set's classes.
    case labelOutOfRange(case: String, value: Int, classCount: Int)
    /// A file of a case cannot be read (its reason from the reader).
    case unreadable(case: String, file: String, reason: String)
    /// A file of a case is of a kind the loader does not take.
    case unsupported(case: String, file: String, reason: String)

    public var description: String {
        switch self {
        case let .invalidDescription(file, reason): return "\(file): \(reason)"
        case let .unpairedImage(name, file): return "case \(name): image \(file) has no label file in labels/"
        case let .unpairedLabel(name, file): return "case \(name): label file \(file) has no image in images/"
        case let .missingCase(name, split):
            return "case \(name): listed in split \"\(split)\" but images/ has no \(name).png, .h5, .dcm or \(name)/"
        case let .caseInTwoSplits(name, splits):
            return "case \(name): listed in several splits (\(splits.joined(separator: ", "))); a case belongs to one"
        case let .shapeMismatch(name, image, labels):
            return "case \(name): image is \(image[0])×\(image[1]) pixels but labels are \(labels[0])×\(labels[1])"
        case let .labelOutOfRange(name, value, classCount):
            return "case \(name): label value \(value) is outside the \(classCount) classes of dataset.json "
                + "(0...\(classCount - 1))"
        case let .unreadable(name, file, reason): return "case \(name): cannot read \(file): \(reason)"
        case let .unsupported(name, file, reason): return "case \(name): \(file): \(reason)"
        }
    }

    /// The case the error names, if any.
    public var caseName: String? {
        switch self {
        case .invalidDescription: return nil
        case let .unpairedImage(name, _), let .unpairedLabel(name, _), let .missingCase(name, _),
             let .caseInTwoSplits(name, _), let .shapeMismatch(name, _, _), let .labelOutOfRange(name, _, _),
             let .unreadable(name, _, _), let .unsupported(name, _, _):
            return name
        }
    }
}
