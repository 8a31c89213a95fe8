import CDCMTK
import Foundation

/// An association with a DICOM peer (dcmnet's `DcmSCU`), opened for one purpose and released when the value is
/// released: verification (C-ECHO), storage (C-STORE), study-root query (C-FIND) or retrieval (C-GET, the
/// peer's C-STOREs received in the same association; C-MOVE, sent to an AE title the peer knows), optionally over
/// TLS.
public final class DIMSEAssociation {
    public enum Purpose {
        case echo
        /// The SOP classes and transfer syntaxes of the files to send.
        case store(contexts: [(sopClass: String, transferSyntax: String)])
        case find
        case get
        case move
    }

    /// A C-GET's or C-MOVE's outcome: the instances written (C-GET), and the peer's sub-operation counts and final
    /// status.
    public struct Retrieval: Sendable {
        public var received: Int
        public var completed: Int
        public var failed: Int
        public var warnings: Int
        public var status: UInt16
    }

    /// `AET@host:port`, as errors name the peer.
    public let peer: String
    private let pointer: OpaquePointer

    /// Opens an association; `timeoutSeconds` bounds the connection and every exchange; `tls` secures it.
    ///
    /// - Throws: `DICOMError.network` naming the peer: unreachable, refused, no context accepted, or (TLS) a file
    ///   that cannot be read or a certificate not trusted. Rests on `cdcmtk_scu_open` (DcmSCU::initNetwork,
    ///   negotiateAssociation).
    public init(
        host: String, port: Int, calledAET: String, callingAET: String, purpose: Purpose, timeoutSeconds: Int = 30,
        tls: TLSFiles? = nil
    ) throws {
        peer = "\(calledAET)@\(host):\(port)"
        var message = [CChar](repeating: 0, count: 512)
        let kind: cdcmtk_scu_purpose
        var contexts: [String] = []
        switch purpose {
        case .echo: kind = CDCMTK_SCU_ECHO
        case .store(let pairs):
            kind = CDCMTK_SCU_STORE
            contexts = Array(Set(pairs.map { "\($0.sopClass)|\($0.transferSyntax)" })).sorted()
        case .find: kind = CDCMTK_SCU_FIND
        case .get: kind = CDCMTK_SCU_GET
        case .move: kind = CDCMTK_SCU_MOVE
        }
        let opened = withCStringArray(contexts) { list in
            TLSFiles.withC(tls) { files in
                cdcmtk_scu_open(
                    host, UInt16(clamping: port), calledAET, callingAET, kind, list, contexts.count,
                    Int32(clamping: timeoutSeconds), files, &message, message.count)
            }
        }
        guard let opened else { throw DICOMError.network(peer: peer, reason: String(nulTerminated: message)) }
        pointer = opened
    }

    deinit { cdcmtk_scu_close(pointer) }

    private func failure(_ what: String) -> DICOMError {
        .network(peer: peer, reason: "\(what): \(String(cString: cdcmtk_scu_error(pointer)))")
    }

    /// C-ECHO. Rests on `cdcmtk_scu_echo`.
    public func echo() throws {
        var status: UInt16 = 0
        guard cdcmtk_scu_echo(pointer, &status) == 0 else { throw failure("C-ECHO") }
    }

    /// C-STORE of one file; returns the peer's status (0 success, 0xB000–0xBFFF warnings, others failures).
    ///
    /// - Throws: `DICOMError.network` when the exchange itself fails (a status of failure is returned, not thrown).
    ///   Rests on `cdcmtk_scu_store`.
    public func store(_ path: String) throws -> UInt16 {
        var status: UInt16 = 0
        guard cdcmtk_scu_store(pointer, path, &status) == 0 else {
            if status != 0 { return status }
            throw failure("C-STORE")
        }
        return status
    }

    /// Study-root C-FIND at `level` (`STUDY`, `SERIES`, `IMAGE`): the matches, each its returned attributes.
    ///
    /// - Throws: `DICOMError.network`. Rests on `cdcmtk_scu_find`.
    public func find(level: String, keys: [(DICOMTag, String)]) throws -> [[DICOMTag: String]] {
        let texts = Self.queryTexts(keys)
        var buffer: UnsafeMutablePointer<CChar>?
        var (length, status) = (0, UInt16(0))
        let result = withCStringArray(texts) { list in
            cdcmtk_scu_find(pointer, level, list, texts.count, &buffer, &length, &status)
        }
        defer { cdcmtk_free(buffer) }
        guard result == 0, let buffer else { throw failure("C-FIND") }
        guard status == 0 || status == 0xFF00 || status == 0xFF01 else {
            throw DICOMError.network(peer: peer, reason: String(format: "C-FIND: status 0x%04X", status))
        }
        let text = String(cString: buffer)
        return text.split(separator: "\u{1e}").map { record in
            var attributes: [DICOMTag: String] = [:]
            for line in record.split(separator: "\n").map(String.init) {
                let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, let tag = DICOMTag(text: String(parts[0])) else { continue }
                attributes[tag] = parts[1].trimmingCharacters(in: .whitespaces)
            }
            return attributes
        }
    }

    /// Study-root C-GET at `level` with `keys`: every instance the peer sends is written into `folder` (`<n>.dcm`)
    /// and synced before it is acknowledged.
    ///
    /// - Throws: `DICOMError.network` when the exchange fails or an instance cannot be written. Rests on
    ///   `cdcmtk_scu_get`.
    public func get(level: String, keys: [(DICOMTag, String)], into folder: String) throws -> Retrieval {
        let texts = Self.queryTexts(keys)
        var received = 0
        var (completed, failed, warnings, status): (UInt16, UInt16, UInt16, UInt16) = (0, 0, 0, 0)
        let result = withCStringArray(texts) { list in
            cdcmtk_scu_get(
                pointer, level, list, texts.count, folder, &received, &completed, &failed, &warnings, &status)
        }
        guard result == 0 else { throw failure("C-GET") }
        return Retrieval(
            received: received, completed: Int(completed), failed: Int(failed), warnings: Int(warnings),
            status: status)
    }

    /// Study-root C-MOVE at `level` with `keys` to `destination`, an AE title whose address the peer knows; the
    /// instances arrive over associations the peer opens to it (`received` is 0 here).
    ///
    /// - Throws: `DICOMError.network` when the exchange fails. Rests on `cdcmtk_scu_move`.
    public func move(level: String, keys: [(DICOMTag, String)], to destination: String) throws -> Retrieval {
        let texts = Self.queryTexts(keys)
        var (completed, failed, warnings, status): (UInt16, UInt16, UInt16, UInt16) = (0, 0, 0, 0)
        let result = withCStringArray(texts) { list in
            cdcmtk_scu_move(
                pointer, level, list, texts.count, destination, &completed, &failed, &warnings, &status)
        }
        guard result == 0 else { throw failure("C-MOVE") }
        return Retrieval(
            received: 0, completed: Int(completed), failed: Int(failed), warnings: Int(warnings), status: status)
    }
}

extension DIMSEAssociation {
    /// Query keys as `cdcmtk_scu_find`, `_get` and `_move` take them: "gggg,eeee=value".
    fileprivate static func queryTexts(_ keys: [(DICOMTag, String)]) -> [String] {
        keys.map { String(format: "%04x,%04x=", $0.0.group, $0.0.element) + $0.1 }
    }
}

/// `body` with `strings` as a C array of C strings, valid for its duration.
private func withCStringArray<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
    let copies = strings.map { UnsafePointer(strdup($0)) }
    defer { copies.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
    return copies.withUnsafeBufferPointer { body($0.baseAddress) }
}
