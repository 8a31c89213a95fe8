/// Errors of the classical baseline: degenerate inputs and impossible configurations.
public enum ClassicalError: Error, CustomStringConvertible, Equatable {
    case invalidArgument(String)

    public var description: String {
        switch self {
        case let .invalidArgument(message): return message
        }
    }
}
