import DICOM
import Foundation
import SliceLabSupport

/// `slicelab push` and `slicelab pull`: instances sent to a remote (C-STORE, STOW-RS) and retrieved from it (C-GET,
/// C-MOVE, WADO-RS) into `DIR/<study>/<series>/<sop>.dcm`.
public enum DICOMTransfer {
    /// One instance's outcome: the file and the peer's status (0 success; 0xB000–0xBFFF warnings), or why it was
    /// not sent.
    public struct Sent: Sendable {
        public var file: String
        public var status: UInt16?
        public var problem: String?
        /// The instance's SOP Instance UID, for a file that was sent.
        public var sopInstanceUID: String? = nil

        public var succeeded: Bool {
            problem == nil && status.map { $0 == 0 || (0xB000...0xBFFF).contains($0) } == true
        }
    }

    /// The DICOM files under `paths` (files, and folders searched recursively; hidden files left out), sorted.
    public static func files(_ paths: [String]) -> [String] {
        paths.flatMap { path -> [String] in
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else {
                return [path]
            }
            let enumerator = FileManager.default.enumerator(atPath: path)
            var found: [String] = []
            while let name = enumerator?.nextObject() as? String {
                let full = URL(fileURLWithPath: path).appendingPathComponent(name).path
                var directory: ObjCBool = false
                if !name.split(separator: "/").contains(where: { $0.hasPrefix(".") }),
                    FileManager.default.fileExists(atPath: full, isDirectory: &directory), !directory.boolValue
                {
                    found.append(full)
                }
            }
            return found.sorted()
        }
    }

    /// Sends every DICOM file of `paths` to `remote` in one association, reporting each; files that are not DICOM
    /// (or lack a SOP class) are reported and not sent.
    ///
    /// Over DICOMweb the files go in STOW-RS requests of at most 64 MiB, each instance reported from the
    /// response's Referenced and Failed SOP Sequences (status 0, or 0xC000 with the failure reason).
    ///
    /// - Throws: `DICOMError.network` when the association cannot be opened, `NetworkError.web` when a request
    ///   fails as a whole.
    public static func push(
        _ paths: [String], to remote: Remote, using connection: Connection, progress: ProgressReporter? = nil
    ) throws -> [Sent] {
        var results: [Sent] = []
        var sendable: [(path: String, sopClass: String, syntax: String, sopInstance: String)] = []
        for path in files(paths) {
            do {
                let file = try DICOMFile(path: path)
                guard let sopClass = file.dataset.string(.sopClassUID), !sopClass.isEmpty else {
                    results.append(Sent(file: path, status: nil, problem: "no SOP Class UID"))
                    continue
                }
                sendable.append((path, sopClass, file.transferSyntaxUID, file.dataset.string(.sopInstanceUID) ?? ""))
            } catch {
                results.append(Sent(file: path, status: nil, problem: "not sent: \(error)"))
            }
        }
        guard !sendable.isEmpty else { return results }
        if case .web(let url) = remote {
            let client = connection.web(url)
            var batch: [(path: String, uid: String, data: Data)] = []
            func flush() throws {
                guard !batch.isEmpty else { return }
                let outcome = try client.store(batch.map { ($0.uid, $0.data) })
                for item in batch {
                    switch outcome[item.uid] {
                    case .some(.none):
                        results.append(Sent(file: item.path, status: 0, problem: nil, sopInstanceUID: item.uid))
                    case .some(.some(let reason)):
                        results.append(Sent(file: item.path, status: 0xC000, problem: reason))
                    case .none:
                        results.append(Sent(file: item.path, status: nil, problem: "not in the STOW-RS response"))
                    }
                    progress?.advance(status: URL(fileURLWithPath: item.path).lastPathComponent)
                }
                batch = []
            }
            for item in sendable {
                guard let data = FileManager.default.contents(atPath: item.path) else {
                    results.append(Sent(file: item.path, status: nil, problem: "cannot be read"))
                    continue
                }
                if batch.map(\.data.count).reduce(data.count, +) > 64 << 20 { try flush() }
                batch.append((item.path, item.sopInstance, data))
            }
            try flush()
            return results
        }
        let association = try connection.association(
            with: remote, for: .store(contexts: sendable.map { ($0.sopClass, $0.syntax) }))
        for item in sendable {
            do {
                results.append(
                    Sent(
                        file: item.path, status: try association.store(item.path), problem: nil,
                        sopInstanceUID: item.sopInstance))
            } catch {
                results.append(Sent(file: item.path, status: nil, problem: "\(error)"))
            }
            progress?.advance(status: URL(fileURLWithPath: item.path).lastPathComponent)
        }
        return results
    }

    /// What a pull wrote.
    public struct Pulled: Sendable {
        /// Every file written, `<study>/<series>/<sop>.dcm` under the output folder.
        public var files: [String] = []
        /// Instances the peer reported failed or that could not be placed.
        public var problems: [String] = []
    }

    /// Retrieves each study or series UID of `uids` from `remote` (C-GET at the level the UID is found at: a
    /// series' study is looked up first, as the study root model needs it) into `folder/<study>/<series>/<sop>.dcm`.
    /// Files arrive in a scratch folder inside `folder` and are renamed into place only after their UIDs are
    /// checked to be UIDs (never a path outside `folder`); an existing file of the same SOP instance is replaced.
    ///
    /// With `move`, C-MOVE instead of C-GET: SliceLab listens as the move's destination for the length of the
    /// pull (over TLS when the remote is `dicom+tls://`), and the instances arrive in the same way.
    ///
    /// Over DICOMweb: QIDO-RS finds a series' study, WADO-RS retrieves the study or series as multipart Part 10
    /// files, each written and synced in the scratch folder, then placed the same way.
    ///
    /// - Throws: `NetworkError.invalidUID` for a UID given that is none, `DICOMError.network` naming the peer,
    ///   `NetworkError.web` naming the URL.
    public static func pull(
        _ uids: [String], from remote: Remote, into folder: String, using connection: Connection,
        move: MoveReceiver? = nil, log: (String) -> Void = { _ in }
    ) throws -> Pulled {
        for uid in uids { _ = try DICOMUID.checked(uid, context: "pull") }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var pulled = Pulled()
        var receiver: MoveReceiver.Session?
        let moveScratch = URL(fileURLWithPath: folder).appendingPathComponent(".incoming-\(getpid())-move")
        defer {
            receiver?.stop()
            try? FileManager.default.removeItem(at: moveScratch)
        }
        if let move {
            guard case .dimse(let aet, _, _, let secure) = remote else {
                throw NetworkError.unsupported(remote: "\(remote)", reason: "C-MOVE needs a DIMSE remote")
            }
            try FileManager.default.createDirectory(at: moveScratch, withIntermediateDirectories: true)
            receiver = try MoveReceiver.Session(
                move, calledBy: aet, tls: secure ? (connection.tls ?? TLSFiles()) : nil, scratch: moveScratch.path,
                folder: folder)
        }
        for uid in uids {
            // A series UID is found at series level with its study; otherwise the UID is a study's.
            var series = DICOMQuery(level: .series)
            series.seriesInstanceUID = uid
            let match = try series.run(on: remote, using: connection).first
            var keys: [(DICOMTag, String)] = [(.studyInstanceUID, uid)]
            var level = "STUDY"
            var path = "/studies/\(uid)"
            if let study = match?["StudyInstanceUID"], !study.isEmpty {
                let checked = try DICOMUID.checked(study, context: "the study of series \(uid)")
                (keys, level) = ([(.studyInstanceUID, checked), (.seriesInstanceUID, uid)], "SERIES")
                path = "/studies/\(checked)/series/\(uid)"
            }
            let scratch = URL(fileURLWithPath: folder).appendingPathComponent(".incoming-\(getpid())-\(uid.suffix(16))")
            try? FileManager.default.removeItem(at: scratch)
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: scratch) }
            var received = 0
            switch remote {
            case .dimse:
                let retrieval: DIMSEAssociation.Retrieval
                if let receiver, let move {
                    let before = receiver.stored().count
                    retrieval = try connection.association(with: remote, for: .move).move(
                        level: level, keys: keys, to: move.aet)
                    let stored = receiver.stored()
                    pulled.files += stored[before...]
                    received = stored.count - before
                } else {
                    retrieval = try connection.association(with: remote, for: .get).get(
                        level: level, keys: keys, into: scratch.path)
                    received = retrieval.received
                }
                if retrieval.failed > 0 {
                    pulled.problems.append("\(uid): the peer reported \(retrieval.failed) failed sub-operation(s)")
                }
            case .web(let url):
                for (index, data) in try connection.web(url).retrieve(path).enumerated() {
                    try writeAtomically(data, to: scratch.appendingPathComponent("\(index + 1).dcm").path)
                    received += 1
                }
            }
            if received == 0 {
                pulled.problems.append("\(uid): no instance received (\(level.lowercased()) not found?)")
            }
            for name in (try FileManager.default.contentsOfDirectory(atPath: scratch.path)).sorted() {
                let path = scratch.appendingPathComponent(name).path
                do {
                    pulled.files.append(try place(path, under: folder))
                } catch {
                    pulled.problems.append("\(uid): \(error)")
                }
            }
            log("pull: \(uid) (\(level.lowercased())): \(received) instance(s)")
        }
        return pulled
    }

    /// Moves a received file to `folder/<study>/<series>/<sop>.dcm` after checking the three UIDs.
    static func place(_ path: String, under folder: String) throws -> String {
        let file = try DICOMFile(path: path)
        let study = try DICOMUID.checked(file.dataset.string(.studyInstanceUID) ?? "", context: "Study Instance UID")
        let series = try DICOMUID.checked(file.dataset.string(.seriesInstanceUID) ?? "", context: "Series Instance UID")
        let sop = try DICOMUID.checked(file.dataset.string(.sopInstanceUID) ?? "", context: "SOP Instance UID")
        let target = URL(fileURLWithPath: folder).appendingPathComponent(study).appendingPathComponent(series)
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        let destination = target.appendingPathComponent(sop + ".dcm").path
        guard rename(path, destination) == 0 else {
            throw NetworkError.unsupported(remote: destination, reason: "cannot move the received file into place")
        }
        return destination
    }
}
