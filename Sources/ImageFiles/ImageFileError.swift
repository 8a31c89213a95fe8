import SliceLabSupport

/// Errors reading or writing PNG and HDF5 files, each naming the file and the cause.
public enum ImageFileError: Error, CustomStringConvertible, Equatable {
    /// The file is missing, unreadable, or not of the expected format.
    case unreadable(file: String, reason: String)
    /// Writing failed; any earlier version of the file is intact.
    case unwritable(file: String, reason: String)
    /// The file claims a size beyond a configured limit; nothing was allocated.
    case tooLarge(file: String, reason: String)
    /// The requested object does not exist in the file.
    case missing(file: String, object: String)
    /// The object exists but its type or shape is not what the caller asked for.
    case typeMismatch(file: String, object: String, reason: String)
    /// The caller passed values that cannot be written (a shape that does not match the data, for example).
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .unreadable(let file, let reason): return "\(file): cannot read: \(reason)"
        case .unwritable(let file, let reason): return "\(file): cannot write: \(reason)"
        case .tooLarge(let file, let reason): return "\(file): refused: \(reason)"
        case .missing(let file, let object): return "\(file): no object '\(object)'"
        case .typeMismatch(let file, let object, let reason): return "\(file): '\(object)': \(reason)"
        case .invalidArgument(let message): return message
        }
    }
}

extension ReadLimits {
    /// `check(_:bytesPerValue:file:what:)`, its refusal as `ImageFileError.tooLarge`.
    func checkFile(_ extents: [Int], bytesPerValue: Int, file: String, what: String) throws {
        do {
            try check(extents, bytesPerValue: bytesPerValue, file: file, what: what)
        } catch let ReadLimitError.tooLarge(file, reason) {
            throw ImageFileError.tooLarge(file: file, reason: reason)
        }
    }
}
