/// What goes wrong when a process runs as one rank of a job.
public enum DistributedError: Error, Equatable, CustomStringConvertible {
    /// A launcher variable holds something that is not a rank or size.
    case invalidEnvironment(variable: String, value: String)
    /// Started by a launcher MPI cannot join.
    case unsupportedLauncher(String)
    /// An MPI call failed; `call` is the MPI function, `message` the library's text.
    case mpiFailed(call: String, code: Int32, message: String)
    /// A collective waited longer than the job's timeout: another rank died or hangs.
    case timedOut(operation: String, rank: Int, seconds: Double)

    public var description: String {
        switch self {
        case .invalidEnvironment(let variable, let value):
            return "launcher variable \(variable) is \"\(value)\", not a valid rank or size"
        case .unsupportedLauncher(let reason):
            return "unsupported launcher: \(reason)"
        case .mpiFailed(let call, let code, let message):
            return "\(call) failed (MPI error \(code)): \(message)"
        case .timedOut(let operation, let rank, let seconds):
            return "rank \(rank): \(operation) waited more than \(Int(seconds)) s for the other ranks"
        }
    }
}
