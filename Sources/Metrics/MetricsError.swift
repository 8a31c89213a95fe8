/// Errors computing metrics: mismatched shapes, labels outside the declared classes, bad spacing or options.
/// Each names the case it happened in when the caller gave one.
public enum MetricsError: Error, CustomStringConvertible, Equatable {
    case shapeMismatch(reference: [Int], prediction: [Int])
    /// A label value ≥ the class count, in the reference or the prediction.
    case labelOutOfRange(label: Int, classCount: Int, role: String)
    /// Only 2-D and 3-D label maps are supported; every extent must be positive.
    case unsupportedShape([Int])
    /// Spacing must have one positive, finite value per dimension.
    case invalidSpacing([Double])
    /// The two runs of a comparison do not hold the same cases or classes.
    case unpairedRuns(reason: String)
    /// A parameter out of its range (class count, tolerance, resamples).
    case invalidArgument(String)
    /// An error about one case, wrapping the cause.
    indirect case inCase(String, MetricsError)

    public var description: String {
        switch self {
        case .shapeMismatch(let r, let p): return "shape mismatch: reference \(r), prediction \(p)"
        case .labelOutOfRange(let label, let count, let role):
            return "\(role) holds label \(label), not below the class count \(count)"
        case .unsupportedShape(let shape): return "unsupported label-map shape \(shape): need 2-D or 3-D, no empty axis"
        case .invalidSpacing(let spacing): return "invalid spacing \(spacing): need one positive value per axis (mm)"
        case .unpairedRuns(let reason): return "runs cannot be compared: \(reason)"
        case .invalidArgument(let message): return message
        case .inCase(let name, let error): return "case '\(name)': \(error)"
        }
    }
}
