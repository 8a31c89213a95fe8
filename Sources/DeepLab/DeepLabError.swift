import COneDNN

/// Errors of the DeepLabV3 engine: configuration, weights and oneDNN failures.
public enum DeepLabError: Error, CustomStringConvertible, Equatable {
    case oneDNN(call: String, status: String)

    public var description: String {
        switch self {
        case let .oneDNN(call, status): return "oneDNN \(call) failed: \(status)"
        }
    }
}

/// The version of oneDNN underneath the engine, e.g. "2.6.3".
public var oneDNNVersion: String {
    guard let v = dnnl_version() else { return "unknown" }
    return "\(v.pointee.major).\(v.pointee.minor).\(v.pointee.patch)"
}
