/// Errors of `slicelab compare` that are not the errors of the data set, the model or the methods.
public enum CompareError: Error, CustomStringConvertible, Equatable {
    case emptySplit(dataset: String, split: String, available: [String])
    case invalidMapping(spec: String, reason: String)
    case duplicateRun(name: String)
    /// `--external NAME=FOLDER` lacks label files for cases of the split.
    case externalMissing(run: String, folder: String, cases: [String])
    /// An `--external` label file on another grid than the case's reference.
    case externalShape(run: String, file: String, shape: [Int], reference: [Int])

    public var description: String {
        switch self {
        case .emptySplit(let dataset, let split, let available):
            return "\(dataset): split '\(split)' has no cases (splits: \(available.joined(separator: ", ")))"
        case .invalidMapping(let spec, let reason): return "--classical '\(spec)': \(reason)"
        case .duplicateRun(let name): return "two runs are named '\(name)'; give one a name=… in its --classical spec"
        case .externalMissing(let run, let folder, let cases):
            return "--external \(run)=\(folder): no label file for \(cases.count) case(s) of the split: "
                + cases.prefix(5).joined(separator: ", ") + (cases.count > 5 ? ", …" : "")
        case .externalShape(let run, let file, let shape, let reference):
            return "--external \(run): \(file) has shape \(shape) but the case's reference has \(reference)"
        }
    }
}
