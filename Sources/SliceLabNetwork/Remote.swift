import Foundation

/// A DICOM peer: a DIMSE application entity (`dicom://AET@host:port`, or `dicom+tls://AET@host:port` for an
/// association over TLS) or a DICOMweb service (`dicomweb://host:port/path`, `http://…`, `https://…`), given
/// directly or by name from a remotes file.
public enum Remote: Sendable, Equatable, CustomStringConvertible {
    case dimse(aet: String, host: String, port: Int, tls: Bool = false)
    case web(url: URL)

    /// Parses `text`, a remote or a name of `remotes` (a JSON object of names to remotes).
    ///
    /// - Throws: `NetworkError.invalidRemote` saying what is wrong.
    public init(_ text: String, remotes: [String: String] = [:]) throws {
        if let named = remotes[text] {
            self = try Remote(named)
            return
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw NetworkError.invalidRemote(
                text: text,
                reason:
                    "expected dicom://AET@host:port, dicom+tls://AET@host:port, dicomweb://host:port/path, "
                    + "http(s)://… or a name in --remotes"
                    + (remotes.isEmpty ? "" : " (\(remotes.keys.sorted().joined(separator: ", ")))"))
        }
        guard let host = components.host, !host.isEmpty else {
            throw NetworkError.invalidRemote(text: text, reason: "no host")
        }
        switch scheme {
        case "dicom", "dicom+tls":
            guard let aet = components.user, Self.isValidAET(aet) else {
                throw NetworkError.invalidRemote(
                    text: text, reason: "the called AE title (dicom://AET@host:port) must be 1–16 printable characters")
            }
            guard let port = components.port, (1...65535).contains(port) else {
                throw NetworkError.invalidRemote(text: text, reason: "no port (dicom://AET@host:port)")
            }
            self = .dimse(aet: aet, host: host, port: port, tls: scheme == "dicom+tls")
        case "dicomweb", "http", "https":
            var web = components
            web.scheme = scheme == "https" ? "https" : "http"
            guard let url = web.url else { throw NetworkError.invalidRemote(text: text, reason: "not a URL") }
            self = .web(url: url)
        default:
            throw NetworkError.invalidRemote(text: text, reason: "unknown scheme '\(scheme)'")
        }
    }

    /// An AE title: 1–16 characters of the default repertoire, no backslash, not all blank (PS3.5 6.2).
    public static func isValidAET(_ aet: String) -> Bool {
        (1...16).contains(aet.count) && aet.allSatisfy { $0.isASCII && !$0.isNewline && $0 != "\\" }
            && !aet.allSatisfy({ $0 == " " })
    }

    /// The names and remotes of a remotes file: `{"pacs": "dicom://ORTHANC@10.0.0.5:4242", …}`.
    ///
    /// - Throws: `NetworkError.invalidRemotesFile` naming the file.
    public static func remotes(file path: String) throws -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw NetworkError.invalidRemotesFile(file: path, reason: "cannot be read")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: String] else {
            throw NetworkError.invalidRemotesFile(file: path, reason: "not a JSON object of names to remotes")
        }
        return object
    }

    public var description: String {
        switch self {
        case .dimse(let aet, let host, let port, let tls): return "dicom\(tls ? "+tls" : "")://\(aet)@\(host):\(port)"
        case .web(let url): return url.absoluteString
        }
    }
}

/// DICOM UIDs as file names: only digits and dots, at most 64 characters, never empty, `.` or `..`.
public enum DICOMUID {
    public static func isValid(_ uid: String) -> Bool {
        (1...64).contains(uid.count) && uid.allSatisfy({ $0 == "." || ("0"..."9").contains($0) })
            && uid.contains(where: { $0 != "." })
    }

    /// `uid`, or `NetworkError.invalidUID` naming the context.
    public static func checked(_ uid: String, context: String) throws -> String {
        guard isValid(uid) else { throw NetworkError.invalidUID(uid, context: context) }
        return uid
    }
}
