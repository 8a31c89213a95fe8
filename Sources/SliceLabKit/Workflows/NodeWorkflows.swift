import Foundation
import SliceLabNetwork
import SliceLabSupport

/// How a command reaches a remote: the remote given (or named in a remotes file), SliceLab's calling AE title and
/// the time bound of each exchange.
public struct RemoteOptions: Sendable {
    public var remote: String
    public var remotesFile: String?
    /// DICOMweb credentials (`WebCredentials`): a file, else the environment.
    public var credentialsFile: String?
    public var callingAET = "SLICELAB"
    public var timeoutSeconds = 30

    public init(remote: String) { self.remote = remote }

    /// The remote, parsed (names looked up in `remotesFile`).
    ///
    /// - Throws: `NetworkError.invalidRemote`, `.invalidRemotesFile`.
    public func resolved() throws -> Remote {
        try Remote(remote, remotes: try remotesFile.map(Remote.remotes(file:)) ?? [:])
    }

    /// The DICOMweb credentials, if any.
    public func credentials() throws -> WebCredentials? { try WebCredentials.load(file: credentialsFile) }
}

/// `slicelab query REMOTE`: studies or series matching the filters (C-FIND).
public enum QueryWorkflow {
    public static func run(_ query: DICOMQuery, remote: RemoteOptions) throws -> [DICOMQuery.Match] {
        guard Remote.isValidAET(remote.callingAET) else {
            throw NetworkError.invalidRemote(text: remote.callingAET, reason: "--calling-aet must be 1–16 characters")
        }
        return try query.run(
            on: remote.resolved(), callingAET: remote.callingAET, timeoutSeconds: remote.timeoutSeconds)
    }
}

/// `slicelab pull REMOTE UID… --out DIR`: studies or series into `DIR/<study>/<series>/<sop>.dcm` (C-GET).
public enum PullWorkflow {
    public static func run(
        uids: [String], remote: RemoteOptions, output: String, log: (String) -> Void
    ) throws -> DICOMTransfer.Pulled {
        try DICOMTransfer.pull(
            uids, from: remote.resolved(), into: output, callingAET: remote.callingAET,
            timeoutSeconds: remote.timeoutSeconds, credentials: remote.credentials(), log: log)
    }
}

/// `slicelab push FILE|DIR… --to REMOTE`: instances sent (C-STORE), each reported.
public enum PushWorkflow {
    public static func run(paths: [String], remote: RemoteOptions) throws -> [DICOMTransfer.Sent] {
        let files = DICOMTransfer.files(paths)
        let progress = ProgressReporter("push", total: files.count)
        return try DICOMTransfer.push(
            files, to: remote.resolved(), callingAET: remote.callingAET, timeoutSeconds: remote.timeoutSeconds,
            credentials: remote.credentials(), progress: progress)
    }
}
