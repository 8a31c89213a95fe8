/// Errors of model export, each naming the file or format and the cause.
public enum ExportError: Error, CustomStringConvertible, Equatable {
    /// The checkpoint cannot be exported in this format (an architecture or setting the format cannot express).
    case unsupported(format: String, reason: String)
    /// ONNX's library refused the model (its checker or shape inference) or could not write it.
    case onnx(call: String, message: String)
    /// A Python converter could not run or failed.
    case converter(format: String, message: String)

    public var description: String {
        switch self {
        case .unsupported(let format, let reason): return "cannot export to \(format): \(reason)"
        case .onnx(let call, let message): return "ONNX export failed in \(call): \(message)"
        case .converter(let format, let message): return "\(format) export failed: \(message)"
        }
    }
}
