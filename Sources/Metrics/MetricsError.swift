/// Errors computing metrics: mismatched shapes and labels outside the declared classes.
public enum MetricsError: Error, CustomStringConvertible, Equatable {
    case shapeMismatch(reference: [Int], prediction: [Int])

    public var description: String {
        switch self {
        case let .shapeMismatch(r, p): return "shape mismatch: reference \(r), prediction \(p)"
        }
    }
}
