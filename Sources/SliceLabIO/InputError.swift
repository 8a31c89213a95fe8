/// Errors of SliceLab's workflows about their inputs and outputs, each naming the file and the cause.
public enum InputError: Error, CustomStringConvertible, Equatable {
    /// The file's kind (by extension and content) is not one SliceLab reads here.
    case unsupportedFile(file: String, reason: String)
    /// The file was read but its content does not fit (shape, channels, values).
    case invalidContent(file: String, reason: String)
    /// The output path's kind is not one the command writes.
    case unsupportedOutput(file: String, reason: String)
    /// An option's value (a `--roi` mapping, say) that cannot be used: the message names the option.
    case invalidOption(String)

    public var description: String {
        switch self {
        case .unsupportedFile(let file, let reason): return "\(file): unsupported input: \(reason)"
        case .invalidContent(let file, let reason): return "\(file): \(reason)"
        case .unsupportedOutput(let file, let reason): return "\(file): unsupported output: \(reason)"
        case .invalidOption(let message): return message
        }
    }
}
