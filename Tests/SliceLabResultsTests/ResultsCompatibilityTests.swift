import Foundation
import ImageFiles
import Metrics
import SliceLabResults
import TestSupport
import Testing

/// Results files written before metrics became a table (issue #17 §5): `Fixtures/results-before-metric-table.h5`
/// was written by `slicelab evaluate` at e9a3897 (two runs, 6 cases, 3 classes). They still load, a file lacking
/// a metric loads with that metric absent, and runs can still be added and compared.
struct ResultsCompatibilityTests {
    static let fixture = TestSupport.packageRoot
        .appendingPathComponent("Tests/SliceLabResultsTests/Fixtures/results-before-metric-table.h5").path

    @Test func aResultsFileWrittenBeforeTheChangeLoadsWhole() throws {
        #expect(try ResultsFile.runNames(in: Self.fixture) == ["modelA", "modelB"])
        let run = try ResultsFile.readRun("modelB", from: Self.fixture)
        // Every metric an evaluation with its settings computes (lesion-wise metrics need lesion classes).
        #expect(run.metrics.metrics == MetricRegistry.metrics.filter { $0.isComputed(for: run.settings) }.map(\.name))
        #expect(run.caseCount == 6 && run.classCount == 3 && run.settings.toleranceMM == 2)
        let stored = try TestSupport.runPython(
            """
            import h5py, json, sys
            print(json.dumps(h5py.File(sys.argv[1], "r")["runs/modelB/metrics/dice"][()].reshape(-1).tolist()))
            """, arguments: [Self.fixture])
        let dice = try JSONDecoder().decode([Double].self, from: Data(stored.utf8))
        #expect(run.metrics[.dice] == dice)
    }

    @Test func aMissingMetricIsAbsentAndTheRunStillComparesAndGrows() throws {
        let folder = try TestSupport.temporaryFolder("results-compat")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("results.h5").path
        try FileManager.default.copyItem(atPath: Self.fixture, toPath: path)
        try TestSupport.runPython(
            """
            import h5py, sys
            with h5py.File(sys.argv[1], "a") as f:
                del f["runs/modelB/metrics/nsd"]
                del f["runs/modelB/summary/nsd"]
            """, arguments: [path])
        let a = try ResultsFile.readRun("modelA", from: path)
        let b = try ResultsFile.readRun("modelB", from: path)
        let computed = MetricRegistry.metrics.filter { $0.isComputed(for: b.settings) }
        #expect(b.metrics[.nsd] == nil && b.metrics.metrics.count == computed.count - 1)
        #expect(b.values(.nsd, classIndex: 1).allSatisfy { $0.isNaN })
        let comparison = try ResultsComparison(a, b)
        #expect(comparison.rows[.nsd] == nil && comparison.rows[.dice]?.count == 3)

        // A new run is added beside the old ones, which stay as they were.
        let labels = folder.appendingPathComponent("labels")
        try FileManager.default.createDirectory(at: labels, withIntermediateDirectories: true)
        for i in 0..<2 {
            var samples = [UInt8](repeating: 0, count: 64)
            for p in (8 * i)..<(8 * i + 20) { samples[p] = 1 }
            try PNGImage(rows: 8, columns: 8, channels: 1, samples: samples)
                .write(to: labels.appendingPathComponent("c\(i).png").path)
        }
        let result = try TestSupport.slicelab([
            "evaluate", "--pred", labels.path, "--ref", labels.path,
            "--out", path, "--run", "same"
        ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(try ResultsFile.runNames(in: path) == ["modelA", "modelB", "same"])
        #expect(try ResultsFile.readRun("modelB", from: path).metrics == b.metrics)
    }

    /// Each metric's bootstrap seed comes from its name (FNV-1a of the results file's name for it), not from its
    /// position among the metrics: adding a metric moves no other metric's intervals.
    @Test func bootstrapSeedsComeFromMetricNames() {
        #expect(MetricName.dice.stableHash == 0xca0d_b967_5760_6d76)  // FNV-1a 64 of "dice", computed in Python
        #expect(Set(MetricName.allCases.map(\.stableHash)).count == MetricName.allCases.count)
    }
}
