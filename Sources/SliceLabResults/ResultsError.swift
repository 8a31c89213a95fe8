/// Errors writing or reading a results file, each naming the file and the run.
public enum ResultsError: Error, CustomStringConvertible, Equatable {
    /// A run of that name is already in the file and overwriting was not asked for.
    case runExists(file: String, run: String)
    /// The run name cannot be an HDF5 group name ("/" inside, or empty).
    case invalidRunName(String)
    /// The run is not in the file.
    case missingRun(file: String, run: String)
    /// The run's arrays disagree with each other (case or class counts).
    case inconsistentRun(run: String, reason: String)

    public var description: String {
        switch self {
        case .runExists(let file, let run):
            return "\(file): a run named '\(run)' already exists; pass --overwrite to replace it or --run to rename"
        case .invalidRunName(let name): return "invalid run name '\(name)': it must be non-empty and contain no '/'"
        case .missingRun(let file, let run): return "\(file): no run named '\(run)'"
        case .inconsistentRun(let run, let reason): return "run '\(run)': \(reason)"
        }
    }
}
