import Foundation
import SliceLabSupport

/// The durable state of `slicelab listen`, nothing of it in memory only: every step is a rename inside one
/// folder, so a `kill -9` at any moment leaves each series in exactly one stage, and a restart takes it from there.
///
/// ```
/// incoming/                         instances being received (cleared at start: never acknowledged)
/// received/<study>/<series>/<sop>.dcm   acknowledged instances of series still arriving
/// queue/<series>/                   complete series (idle for --series-idle), waiting to be segmented
/// results/<series>/result.dcm       results waiting to be sent (attempts.json: tries, next try, last error)
/// sent/<series>.json                results delivered
/// dead/<series>/                    what could not be segmented or delivered, with reason.json
/// status.json                       queue depths, failures, the last error (rewritten when one changes)
/// ```
public struct Spool: Sendable {
    public let root: URL

    public var incoming: URL { root.appendingPathComponent("incoming") }
    public var received: URL { root.appendingPathComponent("received") }
    var queue: URL { root.appendingPathComponent("queue") }
    var results: URL { root.appendingPathComponent("results") }
    var sent: URL { root.appendingPathComponent("sent") }
    var dead: URL { root.appendingPathComponent("dead") }
    public var statusFile: URL { root.appendingPathComponent("status.json") }

    /// Opens (creating) the spool at `path` and clears what a crash left half received.
    public init(_ path: String) throws {
        root = URL(fileURLWithPath: path)
        for folder in [incoming, received, queue, results, sent, dead] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: incoming.path)) ?? [] {
            try? FileManager.default.removeItem(at: incoming.appendingPathComponent(name))
        }
    }

    private func children(_ folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { !$0.hasPrefix(".") }
            .sorted()
    }

    private func modified(_ url: URL) -> Date {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date) ?? .distantPast
    }

    /// Moves every series none of whose instances arrived in the last `idle` seconds into the queue (a series that
    /// arrives again after it was queued is merged into it).
    ///
    /// - Returns: the series queued now.
    @discardableResult
    public func queueCompleteSeries(idle: TimeInterval, now: Date = Date()) throws -> [String] {
        var queued: [String] = []
        for study in children(received) {
            let studyFolder = received.appendingPathComponent(study)
            for series in children(studyFolder) {
                let folder = studyFolder.appendingPathComponent(series)
                let files = children(folder).map { folder.appendingPathComponent($0) }
                let newest = files.map(modified).max() ?? modified(folder)
                guard now.timeIntervalSince(newest) >= idle else { continue }
                let target = queue.appendingPathComponent(series)
                if FileManager.default.fileExists(atPath: target.path) {
                    for file in files {
                        _ = rename(file.path, target.appendingPathComponent(file.lastPathComponent).path)
                    }
                    try? FileManager.default.removeItem(at: folder)
                } else {
                    guard rename(folder.path, target.path) == 0 else { continue }
                }
                queued.append(series)
            }
            if children(studyFolder).isEmpty { try? FileManager.default.removeItem(at: studyFolder) }
        }
        return queued
    }

    /// The queued series, oldest first, and their folders.
    public func queued() -> [(series: String, folder: URL)] {
        children(queue).map { ($0, queue.appendingPathComponent($0)) }
    }

    /// Where the result of `series` is written (atomically) before `finish(series:)`.
    public func resultFile(_ series: String) throws -> URL {
        let folder = results.appendingPathComponent(series)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appendingPathComponent("result.dcm")
    }

    /// The series' result is durable: its source instances leave the queue.
    public func finish(series: String) throws {
        try FileManager.default.removeItem(at: queue.appendingPathComponent(series))
    }

    /// Moves a queued series or a result to `dead/` with the reason.
    public func deadLetter(series: String, reason: String) throws {
        let target = dead.appendingPathComponent(series)
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        for source in [queue.appendingPathComponent(series), results.appendingPathComponent(series)]
        where FileManager.default.fileExists(atPath: source.path) {
            _ = rename(
                source.path, target.appendingPathComponent(source.deletingLastPathComponent().lastPathComponent).path)
        }
        try writeJSON(
            ["series": series, "reason": reason, "time": Date().timeIntervalSince1970],
            to: target.appendingPathComponent("reason.json"))
    }

    /// A result's delivery state.
    public struct Attempts: Codable, Sendable {
        public var attempts = 0
        public var nextTry: Double = 0
        public var lastError: String?

        enum CodingKeys: String, CodingKey {
            case attempts
            case nextTry = "next_try"
            case lastError = "last_error"
        }
    }

    private func attemptsFile(_ series: String) -> URL {
        results.appendingPathComponent(series).appendingPathComponent("attempts.json")
    }

    public func attempts(_ series: String) -> Attempts {
        (try? JSONDecoder().decode(Attempts.self, from: Data(contentsOf: attemptsFile(series)))) ?? Attempts()
    }

    /// Results whose next try is due, with their files.
    public func dueResults(now: Date = Date()) -> [(series: String, file: URL)] {
        children(results).compactMap { series in
            let file = results.appendingPathComponent(series).appendingPathComponent("result.dcm")
            guard FileManager.default.fileExists(atPath: file.path),
                attempts(series).nextTry <= now.timeIntervalSince1970
            else { return nil }
            return (series, file)
        }
    }

    /// Records a failed send: the next try after a bounded exponential backoff (1, 2, 4 … `maxBackoff` seconds);
    /// after `maxAttempts` the result goes to `dead/`.
    ///
    /// - Returns: whether the result was dead-lettered.
    @discardableResult
    public func recordFailure(series: String, error: String, maxAttempts: Int, maxBackoff: Double, now: Date = Date())
        throws -> Bool
    {
        var state = attempts(series)
        state.attempts += 1
        state.lastError = error
        if state.attempts >= maxAttempts {
            try deadLetter(series: series, reason: "not delivered after \(state.attempts) attempt(s): \(error)")
            return true
        }
        state.nextTry = now.timeIntervalSince1970 + min(maxBackoff, pow(2, Double(state.attempts - 1)))
        try writeAtomically(try JSONEncoder().encode(state), to: attemptsFile(series).path)
        return false
    }

    /// Records a delivered result and removes it.
    public func markSent(series: String, resultUID: String) throws {
        try writeJSON(
            ["series": series, "result_sop_instance_uid": resultUID, "time": Date().timeIntervalSince1970],
            to: sent.appendingPathComponent("\(series).json"))
        try FileManager.default.removeItem(at: results.appendingPathComponent(series))
    }

    /// Queue depths and failures, as `status.json` holds them.
    public func status(lastError: String?) -> [String: Any] {
        let arriving = children(received).map { children(received.appendingPathComponent($0)).count }.reduce(0, +)
        let failing = children(results).filter { attempts($0).attempts > 0 }
        return [
            "series_arriving": arriving, "series_queued": children(queue).count,
            "results_waiting": children(results).count, "results_failing": failing.count,
            "results_sent": children(sent).count, "dead_letters": children(dead).count,
            "last_error": lastError ?? NSNull(), "time": Date().timeIntervalSince1970
        ]
    }

    /// Writes `status.json` atomically when its figures differ from `previous` (its time aside: an idle node
    /// does not rewrite and sync it every step); returns the figures written or kept.
    @discardableResult
    public func writeStatus(lastError: String?, unlessSameAs previous: NSDictionary? = nil) throws -> NSDictionary {
        let current = status(lastError: lastError)
        let figures = NSDictionary(dictionary: current.filter { $0.key != "time" })
        if let previous, previous == figures { return previous }
        try writeJSON(current, to: statusFile, options: [.sortedKeys, .prettyPrinted])
        return figures
    }

    /// `object` as JSON, written atomically.
    private func writeJSON(_ object: Any, to url: URL, options: JSONSerialization.WritingOptions = [.sortedKeys])
        throws
    {
        try writeAtomically(try JSONSerialization.data(withJSONObject: object, options: options), to: url.path)
    }
}
