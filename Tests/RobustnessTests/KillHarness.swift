import DeepLab
import DeepLabTraining
import Foundation
import Metrics
import SliceLabKit
import SliceLabResults
import SliceLabSupport
import TestSupport

/// Runs the built `slicelab` and kills it with SIGKILL at chosen moments.
enum KillHarness {
    /// The seed of every random kill time; `SLICELAB_FAULT_SEED` overrides it. Printed by each test.
    static let seed: UInt64 =
        ProcessInfo.processInfo.environment["SLICELAB_FAULT_SEED"].flatMap { UInt64($0) }
        ?? 20_261_130
    /// Kills per command; `SLICELAB_FAULT_KILLS` raises it for a longer campaign.
    static let kills = ProcessInfo.processInfo.environment["SLICELAB_FAULT_KILLS"].flatMap { Int($0) } ?? 4

    /// How a run ended.
    struct Outcome {
        let killed: Bool
        let status: Int32
        let seconds: Double
        let standardError: String
    }

    /// When to kill.
    enum KillPoint: CustomStringConvertible {
        case never
        /// `seconds` after the start.
        case after(Double)
        /// `seconds` after the writer's temporary file for `destination` (`.NAME.tmp-…`) appears.
        case duringWrite(of: URL, plus: Double)

        var description: String {
            switch self {
            case .never: return "never"
            case .after(let seconds): return String(format: "at %.2f s", seconds)
            case .duringWrite(let url, let seconds):
                return String(format: "%.3f s into writing %@", seconds, url.lastPathComponent)
            }
        }
    }

    /// Runs `slicelab arguments` and SIGKILLs it at `point` if it is still running then.
    static func run(_ arguments: [String], kill point: KillPoint = .never, in folder: URL) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSupport.slicelabBinary)
        process.arguments = arguments
        let errorLog = folder.appendingPathComponent(".stderr-\(UUID().uuidString.prefix(6))")
        _ = FileManager.default.createFile(atPath: errorLog.path, contents: nil)
        let errorHandle = try FileHandle(forWritingTo: errorLog)
        defer {
            try? errorHandle.close()
            try? FileManager.default.removeItem(at: errorLog)
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errorHandle
        process.standardInput = FileHandle.nullDevice
        let start = Date()
        try process.run()
        var deadline: Date?
        if case .after(let seconds) = point { deadline = start.addingTimeInterval(seconds) }
        var killed = false
        while process.isRunning {
            if deadline == nil, case .duringWrite(let destination, let plus) = point {
                let prefix = "." + destination.lastPathComponent + ".tmp-"
                let entries =
                    (try? FileManager.default.contentsOfDirectory(
                        atPath: destination.deletingLastPathComponent().path)) ?? []
                if entries.contains(where: { $0.hasPrefix(prefix) }) { deadline = Date().addingTimeInterval(plus) }
            }
            if let deadline, Date() >= deadline {
                kill(process.processIdentifier, SIGKILL)
                killed = true
                break
            }
            usleep(1_000)
        }
        process.waitUntilExit()
        let text = (try? String(contentsOf: errorLog, encoding: .utf8)) ?? ""
        return Outcome(
            killed: killed && process.terminationReason == .uncaughtSignal, status: process.terminationStatus,
            seconds: Date().timeIntervalSince(start), standardError: text)
    }

    /// `count` kill points from `seed` mixed with `label`: alternately a moment of the run (stratified over
    /// `duration`, uniform within each stratum) and a moment 0–`writeWindow` s into writing one of `outputs`.
    static func points(
        _ count: Int, within duration: Double, outputs: [URL], writeWindow: Double = 0.05,
        label: String
    ) -> [KillPoint] {
        var random = SeededGenerator(
            seed: seed ^ UInt64(truncatingIfNeeded: label.utf8.reduce(5381) { $0 &* 33 &+ Int($1) }))
        let timed = (count + 1) / 2
        return (0..<count).map { index in
            if index % 2 == 0 {
                let stratum = index / 2
                return .after(
                    duration * (Double(stratum) + Double.random(in: 0.05...1, using: &random)) / Double(timed))
            }
            let output = outputs[(index / 2) % outputs.count]
            return .duringWrite(of: output, plus: Double.random(in: 0...writeWindow, using: &random))
        }
    }

    /// Replaces `destination` with a copy of `source` (a file or a folder); removes it when `source` is absent.
    static func restore(_ source: URL, to destination: URL) throws {
        try? FileManager.default.removeItem(at: destination)
        if FileManager.default.fileExists(atPath: source.path) {
            try FileManager.default.copyItem(at: source, to: destination)
        }
    }

    /// Every run of a results file with its metrics, read back with SliceLab's reader.
    static func results(_ path: String) throws -> [String: MetricTable] {
        var runs: [String: MetricTable] = [:]
        for name in try ResultsFile.runNames(in: path) {
            runs[name] = try ResultsFile.readRun(name, from: path).metrics
        }
        return runs
    }

    /// Whether two results agree run by run and metric by metric (NaN equal to NaN, else bit-equal).
    static func same(_ a: [String: MetricTable], _ b: [String: MetricTable]) -> Bool {
        guard a.keys.sorted() == b.keys.sorted() else { return false }
        for (run, metrics) in a {
            guard let other = b[run], metrics.metrics == other.metrics else { return false }
            for metric in metrics.metrics {
                guard let values = metrics[metric], let theirs = other[metric], theirs.count == values.count,
                    zip(values, theirs).allSatisfy({ $0 == $1 || ($0.isNaN && $1.isNaN) })
                else { return false }
            }
        }
        return true
    }
}
