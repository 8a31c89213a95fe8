/// Errors of the DeepLabV3 engine: configuration, weights and oneDNN failures.
public enum DeepLabError: Error, CustomStringConvertible, Equatable {
    /// A oneDNN call returned a status other than success.
    case oneDNN(call: String, status: String)
    /// A configuration that cannot build a model (why, and what to change).
    case invalidConfiguration(String)
    /// An input tensor whose shape the model cannot take.
    case invalidInput(String)
    /// Intensity normalisation parameters that cannot be applied (why).
    case invalidPreprocessing(String)
    /// A weights file that cannot be parsed (truncated, malformed header, unsupported dtype).
    case malformedWeights(file: String, reason: String)
    /// Weights whose keys or shapes do not match the model: every offending key is listed.
    case mismatchedWeights(file: String, missing: [String], unexpected: [String], misshaped: [String])
    /// A checkpoint without what a SliceLab checkpoint must hold.
    case invalidCheckpoint(file: String, reason: String)
    /// `backward` called without a preceding training-mode forward, or with a gradient of the wrong shape.
    case invalidBackward(String)
    /// The system refused memory for a tensor.
    case outOfMemory(bytes: Int)
    /// A precision this CPU or model does not run (`--precision bf16` without AMX), and why.
    case unavailablePrecision(precision: String, reason: String)

    public var description: String {
        switch self {
        case .oneDNN(let call, let status): return "oneDNN \(call) failed: \(status)"
        case .invalidConfiguration(let why): return "invalid DeepLabV3 configuration: \(why)"
        case .invalidInput(let why): return "invalid input: \(why)"
        case .invalidPreprocessing(let why): return "invalid preprocessing: \(why)"
        case .malformedWeights(let file, let reason): return "\(file): malformed weights: \(reason)"
        case .mismatchedWeights(let file, let missing, let unexpected, let misshaped):
            var parts: [String] = []
            if !missing.isEmpty { parts.append("missing keys: \(missing.joined(separator: ", "))") }
            if !unexpected.isEmpty { parts.append("unexpected keys: \(unexpected.joined(separator: ", "))") }
            if !misshaped.isEmpty { parts.append("mis-shaped keys: \(misshaped.joined(separator: "; "))") }
            return "\(file): weights do not match the model: " + parts.joined(separator: "; ")
        case .invalidCheckpoint(let file, let reason): return "\(file): not a usable SliceLab checkpoint: \(reason)"
        case .invalidBackward(let why): return "backward: \(why)"
        case .outOfMemory(let bytes):
            return
                "out of memory: the system refused \(bytes / 1_048_576) MB for a tensor (try a smaller input or batch)"
        case .unavailablePrecision(let precision, let reason): return "\(precision) is not available: \(reason)"
        }
    }
}
