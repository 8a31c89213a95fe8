/// Errors writing or reading a results file, each naming the file and the run, and of sharded jobs that write one.
public enum ResultsError: Error, CustomStringConvertible, Equatable {
    // MARK: - Results files

    /// A run of that name is already in the file and overwriting was not asked for.
    case runExists(file: String, run: String)
    /// The run name cannot be an HDF5 group name ("/" inside, or empty).
    case invalidRunName(String)
    /// The run is not in the file.
    case missingRun(file: String, run: String)
    /// The run's arrays disagree with each other (case or class counts).
    case inconsistentRun(run: String, reason: String)

    // MARK: - Sharded jobs

    /// These ranks failed their shards (each printed its own error, repeated in `reasons` as they wrote it to the
    /// shared folder); nothing was written to `output`.
    case ranksFailed(ranks: [Int], output: String, reasons: [String] = [])
    /// Rank 0 could not merge the parts (it printed why); nothing was written to `output`.
    case mergeFailed(output: String)

    public var description: String {
        switch self {
        case .runExists(let file, let run):
            return "\(file): a run named '\(run)' already exists; pass --overwrite to replace it or --run to rename"
        case .invalidRunName(let name): return "invalid run name '\(name)': it must be non-empty and contain no '/'"
        case .missingRun(let file, let run): return "\(file): no run named '\(run)'"
        case .inconsistentRun(let run, let reason): return "run '\(run)': \(reason)"
        case .ranksFailed(let ranks, let output, let reasons):
            return "rank\(ranks.count == 1 ? "" : "s") \(ranks.map(String.init).joined(separator: ", ")) failed (see "
                + "\(ranks.count == 1 ? "its" : "their") error above); nothing was written to \(output)"
                + reasons.map { "; " + $0 }.joined()
        case .mergeFailed(let output):
            return "rank 0 could not merge the parts (see its error above); nothing was written to \(output)"
        }
    }
}
