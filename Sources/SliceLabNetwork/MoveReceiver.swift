import DICOM
import Foundation
import SliceLabSupport

/// Where a C-MOVE sends the instances: SliceLab itself, listening as `aet` on `port` while the pull runs (the
/// remote must know that AE title at this host and port). Instances are written as `listen` writes its spool:
/// received into a scratch folder, checked, synced and renamed to `<study>/<series>/<sop>.dcm`.
public struct MoveReceiver: Sendable {
    public var aet: String
    public var port: Int
    /// The calling AE titles let in; empty: the remote's own.
    public var allowedAETs: [String] = []

    public init(aet: String, port: Int, allowedAETs: [String] = []) {
        (self.aet, self.port, self.allowedAETs) = (aet, port, allowedAETs)
    }

    /// A Store SCP on `port` writing under `folder`, running until `stop()`.
    final class Session {
        private let listener: StoreListener
        private let done = DispatchSemaphore(value: 0)
        private let failure = Locked<String?>(nil)
        let description: String

        /// Starts the listener and returns once its port is open.
        ///
        /// - Throws: `DICOMError.network` when the port is taken or the listener cannot start.
        init(_ receiver: MoveReceiver, calledBy remoteAET: String, tls: TLSFiles?, scratch: String, folder: String)
            throws
        {
            description = "\(receiver.aet) on port \(receiver.port)"
            if let tls, tls.key == nil || tls.certificate == nil {
                throw DICOMError.network(
                    peer: description,
                    reason: "a C-MOVE over TLS needs --tls-key and --tls-cert: the PACS connects to SliceLab")
            }
            guard !Self.isListening(port: receiver.port) else {
                throw DICOMError.network(peer: description, reason: "the port is in use")
            }
            var settings = StoreListener.Settings(
                port: receiver.port, aet: receiver.aet, incoming: scratch, received: folder,
                allowedAETs: receiver.allowedAETs.isEmpty ? [remoteAET] : receiver.allowedAETs, allowAnyAET: false)
            (settings.tls, settings.recordsStored) = (tls, true)
            listener = try StoreListener(settings)
            let (listener, done, failure) = (listener, done, failure)
            Thread.detachNewThread {
                do { try listener.run() } catch { failure.withLock { $0 = "\(error)" } }
                done.signal()
            }
            let deadline = Date().addingTimeInterval(10)
            while !Self.isListening(port: receiver.port) {
                if let reason = failure.withLock({ $0 }) {
                    done.wait()
                    throw DICOMError.network(peer: description, reason: reason)
                }
                guard Date() < deadline else {
                    stop()
                    throw DICOMError.network(peer: description, reason: "the port did not open within 10 s")
                }
                Thread.sleep(forTimeInterval: 0.02)
            }
        }

        /// The files stored so far.
        func stored() -> [String] { listener.stored() }

        /// Stops after the current associations end.
        func stop() {
            listener.stop()
            done.wait()
        }

        /// Whether a TCP socket listens on `port` on this host (Linux's /proc/net/tcp and tcp6).
        static func isListening(port: Int) -> Bool {
            let suffix = String(format: ":%04X", port)
            return ["/proc/net/tcp", "/proc/net/tcp6"].contains { table in
                guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { return false }
                return text.split(separator: "\n").dropFirst().contains { line in
                    let fields = line.split(separator: " ")
                    return fields.count > 3 && fields[1].hasSuffix(suffix) && fields[3] == "0A"
                }
            }
        }
    }
}
