import DICOM
import Foundation
import SliceLabNetwork
import SliceLabSupport

/// How a command reaches a remote: the remote given (or named in a remotes file), SliceLab's calling AE title,
/// the time bound of each exchange, DICOMweb credentials and TLS files.
public struct RemoteOptions: Sendable {
    public var remote: String
    public var remotesFile: String?
    /// DICOMweb credentials (`WebCredentials`): a file, else the environment.
    public var credentialsFile: String?
    public var callingAET = "SLICELAB"
    public var timeoutSeconds = 30
    /// TLS (`TLSFiles`): this node's private key and certificate, and the certificates peers' must chain to.
    public var tlsKey: String?
    public var tlsCertificate: String?
    public var tlsTrust: String?

    public init(remote: String) { self.remote = remote }

    /// The TLS files, if any was given.
    var tls: TLSFiles? {
        [tlsKey, tlsCertificate, tlsTrust].allSatisfy { $0 == nil }
            ? nil : TLSFiles(key: tlsKey, certificate: tlsCertificate, trust: tlsTrust)
    }

    /// The remote, parsed (names looked up in `remotesFile`).
    ///
    /// - Throws: `NetworkError.invalidRemote`, `.invalidRemotesFile`.
    public func resolved() throws -> Remote {
        try Remote(remote, remotes: try remotesFile.map(Remote.remotes(file:)) ?? [:])
    }

    /// The calling AE title, time bound, credentials and TLS files.
    ///
    /// - Throws: `NetworkError.invalidRemote` for a calling AE title that is none, `.invalidRemotesFile` for
    ///   credentials that cannot be read.
    public func connection() throws -> Connection {
        guard Remote.isValidAET(callingAET) else {
            throw NetworkError.invalidRemote(text: callingAET, reason: "the calling AE title must be 1–16 characters")
        }
        return Connection(
            callingAET: callingAET, timeoutSeconds: timeoutSeconds,
            credentials: try WebCredentials.load(file: credentialsFile), tls: tls)
    }
}

/// `slicelab query REMOTE`: studies or series matching the filters (C-FIND).
public enum QueryWorkflow {
    public static func run(_ query: DICOMQuery, remote: RemoteOptions) throws -> [DICOMQuery.Match] {
        try query.run(on: remote.resolved(), using: remote.connection())
    }
}

/// `slicelab pull REMOTE UID… --out DIR`: studies or series into `DIR/<study>/<series>/<sop>.dcm` (C-GET, C-MOVE
/// to SliceLab listening as `move`, or WADO-RS).
public enum PullWorkflow {
    public static func run(
        uids: [String], remote: RemoteOptions, output: String, move: MoveReceiver? = nil, log: (String) -> Void
    ) throws -> DICOMTransfer.Pulled {
        try DICOMTransfer.pull(
            uids, from: remote.resolved(), into: output, using: remote.connection(), move: move, log: log)
    }
}

/// `slicelab push FILE|DIR… --to REMOTE`: instances sent (C-STORE), each reported.
public enum PushWorkflow {
    public static func run(paths: [String], remote: RemoteOptions) throws -> [DICOMTransfer.Sent] {
        let files = DICOMTransfer.files(paths)
        let progress = ProgressReporter("push", total: files.count)
        return try DICOMTransfer.push(
            files, to: remote.resolved(), using: remote.connection(), progress: progress)
    }
}
