/// Errors of `slicelab evaluate` about its inputs, each naming the case or the file.
public enum EvaluateError: Error, CustomStringConvertible, Equatable {
    /// A file in one folder has no partner of the same stem in the other.
    case unpairedFiles(predictionsWithoutReference: [String], referencesWithoutPrediction: [String])
    /// Two files in one folder share a stem ("a.png" and "a.h5").
    case duplicateStem(folder: String, stem: String)
    /// A folder holds no label file.
    case noLabelFiles(folder: String)
    /// One of PRED/REF is a folder and the other a file.
    case mixedInputs(prediction: String, reference: String)
    /// The prediction and reference of a case differ in shape.
    case shapeMismatch(case: String, reference: [Int], prediction: [Int])
    /// Options that contradict each other (class names against --num-classes, bad spacing).
    case invalidOption(String)

    public var description: String {
        switch self {
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
        case .shapeMismatch(let name, let reference, let prediction):
            return "case '\(name)': reference shape \(reference) but prediction shape \(prediction)"
        case .invalidOption(let message): return message
        }
    }
}
