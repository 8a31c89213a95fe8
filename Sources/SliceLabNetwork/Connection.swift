import DICOM
import Foundation

/// How SliceLab reaches a remote: its calling AE title, the bound of each exchange, DICOMweb credentials, and the
/// TLS files for `dicom+tls://` associations and HTTPS (a client certificate, and the certificates the service's
/// must chain to instead of the system's).
public struct Connection: Sendable {
    public var callingAET: String
    public var timeoutSeconds: Int
    public var credentials: WebCredentials?
    public var tls: TLSFiles?

    public init(
        callingAET: String = "SLICELAB", timeoutSeconds: Int = 30, credentials: WebCredentials? = nil,
        tls: TLSFiles? = nil
    ) {
        (self.callingAET, self.timeoutSeconds, self.credentials, self.tls) = (
            callingAET, timeoutSeconds, credentials, tls
        )
    }

    /// An association with a DIMSE remote for `purpose`, over TLS when the remote asks for it.
    ///
    /// - Throws: `NetworkError.unsupported` for a DICOMweb remote; `DICOMError.network` naming the peer.
    func association(with remote: Remote, for purpose: DIMSEAssociation.Purpose) throws -> DIMSEAssociation {
        guard case .dimse(let aet, let host, let port, let secure) = remote else {
            throw NetworkError.unsupported(remote: "\(remote)", reason: "not a DIMSE remote")
        }
        return try DIMSEAssociation(
            host: host, port: port, calledAET: aet, callingAET: callingAET, purpose: purpose,
            timeoutSeconds: timeoutSeconds, tls: secure ? (tls ?? TLSFiles()) : nil)
    }

    /// A DICOMweb client of `base`.
    func web(_ base: URL) -> DICOMWebClient { DICOMWebClient(base: base, connection: self) }
}
