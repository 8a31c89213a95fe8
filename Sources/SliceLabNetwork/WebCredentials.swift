import Foundation

/// HTTP credentials of a DICOMweb service, never taken from the command line: a file (`--credentials FILE`,
/// JSON `{"bearer": "TOKEN"}` or `{"basic": "user:password"}`) or the environment (`SLICELAB_DICOMWEB_TOKEN`,
/// `SLICELAB_DICOMWEB_BASIC`).
public enum WebCredentials: Sendable, Equatable {
    case bearer(String)
    case basic(String)

    /// The credentials of `file`, else of the environment, else none.
    ///
    /// - Throws: `NetworkError.invalidRemotesFile` naming a file that does not hold them.
    public static func load(file: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> WebCredentials?
    {
        if let file {
            guard let data = FileManager.default.contents(atPath: file),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: String]
            else {
                throw NetworkError.invalidRemotesFile(file: file, reason: "not a JSON object with 'bearer' or 'basic'")
            }
            if let token = object["bearer"], !token.isEmpty { return .bearer(token) }
            if let pair = object["basic"], pair.contains(":") { return .basic(pair) }
            throw NetworkError.invalidRemotesFile(
                file: file, reason: "holds neither 'bearer' nor 'basic' (user:password)")
        }
        if let token = environment["SLICELAB_DICOMWEB_TOKEN"], !token.isEmpty { return .bearer(token) }
        if let pair = environment["SLICELAB_DICOMWEB_BASIC"], pair.contains(":") { return .basic(pair) }
        return nil
    }

    /// The `Authorization` header.
    var header: String {
        switch self {
        case .bearer(let token): return "Authorization: Bearer \(token)"
        case .basic(let pair): return "Authorization: Basic \(Data(pair.utf8).base64EncodedString())"
        }
    }
}
