import CDCMTK
import Foundation

/// TLS for DIMSE associations (dcmtls, BCP 195 profile): PEM files naming this side and the certificates the peer's
/// must chain to.
///
/// Requesting an association, the peer's certificate is always verified, against `trust` or else the system's
/// certificates; `key` and `certificate` are sent when the peer asks for a client certificate. Accepting
/// associations, `key` and `certificate` are required, and with `trust` every caller must present a certificate
/// that chains to it.
public struct TLSFiles: Sendable, Equatable {
    public var key: String?
    public var certificate: String?
    public var trust: String?

    public init(key: String? = nil, certificate: String? = nil, trust: String? = nil) {
        (self.key, self.certificate, self.trust) = (key, certificate, trust)
    }

    /// `body` with the files as dcmtls' C structure (or NULL when `files` is nil).
    static func withC<T>(_ files: TLSFiles?, _ body: (UnsafePointer<cdcmtk_tls_files>?) -> T) -> T {
        guard let files else { return body(nil) }
        let strings = [files.key, files.certificate, files.trust].map { $0.map { strdup($0) } ?? nil }
        defer { strings.forEach { free($0) } }
        var value = cdcmtk_tls_files(key: strings[0], certificate: strings[1], trust: strings[2])
        return withUnsafePointer(to: &value) { body($0) }
    }
}
