import CDCMTK
import Foundation

/// A Store SCP writing every instance it accepts into a spool (dcmnet's `DcmSCPPool`): each instance is received
/// into `incoming`, checked, synced and renamed to `received/<study>/<series>/<sop>.dcm` before its success status
/// is sent, so an acknowledged instance survives a crash. One per process.
public final class StoreListener: @unchecked Sendable {
    // @unchecked Sendable: the handle is only read after init; `stop` is the C side's thread-safe request.
    private let pointer: OpaquePointer

    public struct Settings: Sendable {
        public var port: Int
        public var aet: String
        public var incoming: String
        public var received: String
        public var allowedAETs: [String]
        public var allowAnyAET: Bool
        public var maxAssociations = 8
        public var maxPDU = 65536
        public var maxInstanceBytes = 1 << 30
        /// Every association over TLS (`key` and `certificate` required; `trust` requires client certificates).
        public var tls: TLSFiles?
        /// Keep the stored instances' paths for `stored()` instead of a JSON line for each (a short-lived
        /// receiver's: the list grows with every instance).
        public var recordsStored = false

        public init(
            port: Int, aet: String, incoming: String, received: String, allowedAETs: [String], allowAnyAET: Bool
        ) {
            (self.port, self.aet, self.incoming, self.received) = (port, aet, incoming, received)
            (self.allowedAETs, self.allowAnyAET) = (allowedAETs, allowAnyAET)
        }
    }

    /// - Throws: `DICOMError.network` when the listener cannot be prepared. Rests on `cdcmtk_listener_create`.
    public init(_ settings: Settings) throws {
        var message = [CChar](repeating: 0, count: 512)
        let copies = settings.allowedAETs.map { UnsafePointer(strdup($0)) }
        defer { copies.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
        let created = copies.withUnsafeBufferPointer { list in
            TLSFiles.withC(settings.tls) { tls in
                cdcmtk_listener_create(
                    UInt16(clamping: settings.port), settings.aet, settings.incoming, settings.received,
                    list.baseAddress, copies.count, settings.allowAnyAET ? 1 : 0,
                    UInt16(clamping: settings.maxAssociations), UInt32(clamping: settings.maxPDU),
                    UInt64(settings.maxInstanceBytes), tls, settings.recordsStored ? 1 : 0, &message, message.count)
            }
        }
        guard let created else {
            throw DICOMError.network(
                peer: "\(settings.aet) on port \(settings.port)", reason: String(nulTerminated: message))
        }
        pointer = created
    }

    deinit { cdcmtk_listener_free(pointer) }

    /// Accepts associations until `stop()`; returns after the current ones end.
    ///
    /// - Throws: `DICOMError.network` when the port cannot be opened. Rests on `cdcmtk_listener_run`.
    public func run() throws {
        guard cdcmtk_listener_run(pointer) == 0 else {
            throw DICOMError.network(peer: "listener", reason: String(cString: cdcmtk_listener_error(pointer)))
        }
    }

    /// Asks `run()` to return once the current associations end. Rests on `cdcmtk_listener_stop`.
    public func stop() { cdcmtk_listener_stop(pointer) }

    /// With `Settings.recordsStored`, the paths of the instances stored so far. Rests on `cdcmtk_listener_stored`.
    public func stored() -> [String] {
        guard let buffer = cdcmtk_listener_stored(pointer) else { return [] }
        defer { cdcmtk_free(buffer) }
        return String(cString: buffer).split(separator: "\n").map(String.init)
    }
}
