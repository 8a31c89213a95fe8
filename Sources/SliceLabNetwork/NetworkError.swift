/// The errors of SliceLab's DICOM node: a remote that cannot be parsed or found, a protocol not available for a
/// remote, an identifier that cannot become a file name. Each names what was given and why it cannot be used.
public enum NetworkError: Error, CustomStringConvertible, Equatable {
    /// A remote that is neither `dicom://AET@host:port`, `dicomweb://host:port/path`, `http(s)://…`, nor a name
    /// in the remotes file.
    case invalidRemote(text: String, reason: String)
    /// A remotes file that cannot be read.
    case invalidRemotesFile(file: String, reason: String)
    /// What was asked of a remote whose protocol cannot do it.
    case unsupported(remote: String, reason: String)
    /// A DICOMweb exchange that failed: the URL and why (unreachable, TLS, an HTTP error status, a body that is
    /// not what the standard says).
    case web(url: String, reason: String)
    /// A UID a peer sent or a user gave that is no DICOM UID (digits and dots, at most 64 characters).
    case invalidUID(String, context: String)

    public var description: String {
        switch self {
        case .invalidRemote(let text, let reason): return "remote '\(text)': \(reason)"
        case .invalidRemotesFile(let file, let reason): return "\(file): \(reason)"
        case .unsupported(let remote, let reason): return "\(remote): \(reason)"
        case .web(let url, let reason): return "\(url): \(reason)"
        case .invalidUID(let uid, let context):
            return "\(context): '\(uid.prefix(80))' is not a DICOM UID (digits and dots, at most 64 characters)"
        }
    }
}
