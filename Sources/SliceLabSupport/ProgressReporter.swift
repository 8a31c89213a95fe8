import Foundation

/// Shows progress of long work on stderr: a redrawn bar on a TTY, plain lines (at most one every few seconds)
/// otherwise, so logs stay readable.
// @unchecked Sendable: every mutable field is read and written under `lock` (workers report progress from
// `Parallel.forEach`).
public final class ProgressReporter: @unchecked Sendable {
    private let label: String
    private let total: Int
    private let isTerminal: Bool
    private let start = Date()
    private var lastPlainLine = Date.distantPast
    private let lock = NSLock()
    private var completed = 0

    /// - Parameters:
    ///   - label: what is being done ("segment", "train").
    ///   - total: the number of units of work.
    public init(_ label: String, total: Int) {
        self.label = label
        self.total = max(total, 1)
        self.isTerminal = isatty(STDERR_FILENO) != 0
    }

    /// Records `count` more units done, with an optional status ("loss 0.31").
    public func advance(by count: Int = 1, status: String = "") {
        lock.lock()
        defer { lock.unlock() }
        completed = min(total, completed + count)
        let elapsed = Date().timeIntervalSince(start)
        let rate = elapsed > 0 ? Double(completed) / elapsed : 0
        let remaining = rate > 0 ? Double(total - completed) / rate : 0
        let tail =
            String(format: "%d/%d  %.2f/s  ETA %@", completed, total, rate, Self.clock(remaining))
            + (status.isEmpty ? "" : "  " + status)
        if isTerminal {
            let width = 30
            let filled = width * completed / total
            let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
            FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(tail)\u{1B}[K".utf8))
            if completed == total { FileHandle.standardError.write(Data("\n".utf8)) }
        } else if completed == total || Date().timeIntervalSince(lastPlainLine) >= 5 {
            lastPlainLine = Date()
            FileHandle.standardError.write(Data("\(label): \(tail)\n".utf8))
        }
    }

    public static func clock(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
    }
}
