import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import SliceLabKit
import TestSupport
import Testing

/// SIGKILL at seeded random moments of `evaluate`, `compare` and `train`: every output is afterwards absent,
/// the previous complete version, or the new complete one; no leftover temporary trips a later run; and
/// `train --resume` finishes a killed run.
@Suite(.serialized) struct KillTests {
    /// Label maps of `count` cases (3 classes, `size`²) under `folder/name`; the prediction shifts the shapes.
    static func labelFolder(_ folder: URL, _ name: String, count: Int, size: Int, shift: Int) throws -> String {
        let url = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for index in 0..<count {
            var labels = [UInt8](repeating: 0, count: size * size)
            for y in 0..<size {
                for x in 0..<size {
                    let (dy, dx) = (y - size / 3 - index % 5, x - size / 3 - shift)
                    if dy * dy + dx * dx < size * size / 36 { labels[y * size + x] = 1 }
                    if y > size * 2 / 3 + shift, x > size / 2 { labels[y * size + x] = 2 }
                }
            }
            try PNGImage(rows: size, columns: size, channels: 1, samples: labels)
                .write(to: url.appendingPathComponent(String(format: "c%03d.png", index)).path)
        }
        return url.path
    }

    @Test func killedEvaluateLeavesThePreviousOrTheNewResultsFile() throws {
        let folder = try TestSupport.temporaryFolder("kill-evaluate")
        defer { try? FileManager.default.removeItem(at: folder) }
        let reference = try Self.labelFolder(folder, "ref", count: 24, size: 96, shift: 0)
        let prediction = try Self.labelFolder(folder, "pred", count: 24, size: 96, shift: 3)
        let results = folder.appendingPathComponent("results.h5")
        let previous = folder.appendingPathComponent("previous.h5")
        func evaluate(_ run: String, into file: URL) -> [String] {
            ["evaluate", "--pred", prediction, "--ref", reference, "--out", file.path, "--run", run]
        }
        let first = try KillHarness.run(evaluate("first", into: previous), in: folder)
        #expect(first.status == 0, "\(first.standardError)")
        let expectedPrevious = try KillHarness.results(previous.path)
        // The new complete version: the previous file with a second run added, made without a kill.
        let complete = folder.appendingPathComponent("complete.h5")
        try KillHarness.restore(previous, to: complete)
        let full = try KillHarness.run(evaluate("second", into: complete), in: folder)
        #expect(full.status == 0, "\(full.standardError)")
        let expectedNew = try KillHarness.results(complete.path)
        #expect(expectedNew.keys.sorted() == ["first", "second"])

        let points = KillHarness.points(KillHarness.kills, within: full.seconds, outputs: [results], label: "evaluate")
        print("kill evaluate: seed \(KillHarness.seed), run \(String(format: "%.2f", full.seconds)) s, kills \(points)")
        var outcomes: [String] = []
        for delay in points {
            try KillHarness.restore(previous, to: results)
            let outcome = try KillHarness.run(evaluate("second", into: results), kill: delay, in: folder)
            #expect(outcome.killed || outcome.status == 0, "\(outcome.standardError)")
            if Fixtures.bytes(results.path) == Fixtures.bytes(previous.path) {
                outcomes.append("previous")
            } else {
                #expect(
                    KillHarness.same(try KillHarness.results(results.path), expectedNew),
                    "killed \(delay) (seed \(KillHarness.seed)): results.h5 is neither version")
                outcomes.append("new")
            }
        }
        print("kill evaluate: outcomes \(outcomes)")
        try KillHarness.restore(previous, to: results)
        let last = try KillHarness.run(evaluate("second", into: results), in: folder)
        #expect(last.status == 0, "\(last.standardError)")
        #expect(Fixtures.leftoverTemporaries(in: folder).isEmpty, "\(Fixtures.leftoverTemporaries(in: folder))")
        #expect(KillHarness.same(try KillHarness.results(results.path), expectedNew))
        _ = expectedPrevious
    }

    @Test func killedCompareLeavesThePreviousOrTheNewResultsAndReport() throws {
        let folder = try TestSupport.temporaryFolder("kill-compare")
        defer { try? FileManager.default.removeItem(at: folder) }
        let set = try Fixtures.labeledSet(in: folder, count: 7, trainCount: 3, size: 48)
        let model = try Fixtures.model(in: folder)
        func compare(_ spec: String, results: URL, report: URL) -> [String] {
            [
                "compare", set.path, "--model", model, "--classical", spec, "--out", results.path, "--report",
                report.path,
                "--overwrite", "--threads", "2"
            ]
        }
        let (previousResults, previousReport) = (
            folder.appendingPathComponent("previous.h5"),
            folder.appendingPathComponent("previous-report")
        )
        let first = try KillHarness.run(
            compare(
                "kmeans:space=gray,map=train-vote", results: previousResults,
                report: previousReport), in: folder)
        #expect(first.status == 0, "\(first.standardError)")
        let (completeResults, completeReport) = (
            folder.appendingPathComponent("complete.h5"),
            folder.appendingPathComponent("complete-report")
        )
        try KillHarness.restore(previousResults, to: completeResults)
        try KillHarness.restore(previousReport, to: completeReport)
        let newSpec = "multiotsu:space=gray,map=oracle"
        let full = try KillHarness.run(compare(newSpec, results: completeResults, report: completeReport), in: folder)
        #expect(full.status == 0, "\(full.standardError)")
        let expectedNew = try KillHarness.results(completeResults.path)
        #expect(expectedNew.count == 3)
        let previousHTML = Fixtures.bytes(previousReport.path + "/index.html")
        let newHTML = Fixtures.bytes(completeReport.path + "/index.html")
        #expect(previousHTML != nil && newHTML != nil && previousHTML != newHTML)

        let (results, report) = (folder.appendingPathComponent("results.h5"), folder.appendingPathComponent("report"))
        let points = KillHarness.points(
            KillHarness.kills, within: full.seconds,
            outputs: [results, report.appendingPathComponent("index.html")], label: "compare")
        print("kill compare: seed \(KillHarness.seed), run \(String(format: "%.2f", full.seconds)) s, kills \(points)")
        var outcomes: [String] = []
        for delay in points {
            try KillHarness.restore(previousResults, to: results)
            try KillHarness.restore(previousReport, to: report)
            let outcome = try KillHarness.run(
                compare(newSpec, results: results, report: report), kill: delay,
                in: folder)
            #expect(outcome.killed || outcome.status == 0, "\(outcome.standardError)")
            var outcome2 = ""
            if Fixtures.bytes(results.path) == Fixtures.bytes(previousResults.path) {
                outcome2 = "previous"
            } else {
                #expect(
                    KillHarness.same(try KillHarness.results(results.path), expectedNew),
                    "killed \(delay) (seed \(KillHarness.seed)): results.h5 is neither version")
                outcome2 = "new"
            }
            let html = Fixtures.bytes(report.path + "/index.html")
            #expect(
                html == previousHTML || html == newHTML,
                "killed \(delay) (seed \(KillHarness.seed)): index.html is neither version")
            outcomes.append(outcome2 + (html == newHTML ? "+new report" : "+previous report"))
        }
        print("kill compare: outcomes \(outcomes)")
        let last = try KillHarness.run(compare(newSpec, results: results, report: report), in: folder)
        #expect(last.status == 0, "\(last.standardError)")
        #expect(Fixtures.leftoverTemporaries(in: folder).isEmpty, "\(Fixtures.leftoverTemporaries(in: folder))")
    }

    /// The step of a checkpoint, after checking that the model and the training state both load.
    static func checkpointStep(_ path: String) throws -> Int {
        let file = try HDF5File.open(path)
        _ = try DeepLabCheckpoint.read(from: file)
        return try TrainingCheckpoint.readTraining(from: file).1.step
    }

    @Test func killedTrainLeavesCompleteCheckpointsAndResumes() throws {
        let folder = try TestSupport.temporaryFolder("kill-train")
        defer { try? FileManager.default.removeItem(at: folder) }
        let set = try Fixtures.labeledSet(in: folder, count: 4, trainCount: 4, size: 32)
        let steps = 3
        // The smallest network the CLI builds (MobileNetV2, 8-channel ASPP): a debug-build step takes seconds.
        func train(_ out: URL, resume: URL? = nil) -> [String] {
            [
                "train", set.path, "--arch", "deeplabv3_mobilenet_v2", "--aspp-channels", "8", "--output-stride", "16",
                "--num-classes", "3", "--steps", "\(steps)", "--batch", "1", "--crop", "32", "--val-every", "1",
                "--threads", "2", "--out", out.path
            ]
                + (resume.map { ["--resume", $0.path] } ?? [])
        }
        let reference = folder.appendingPathComponent("reference")
        try FileManager.default.createDirectory(at: reference, withIntermediateDirectories: true)
        let full = try KillHarness.run(train(reference.appendingPathComponent("m.h5")), in: folder)
        #expect(full.status == 0, "\(full.standardError)")
        #expect(try Self.checkpointStep(reference.appendingPathComponent("m.last.h5").path) == steps)

        // Each run writes into its own folder: the kill points name the files there.
        let runs = (0..<max(2, KillHarness.kills / 2)).map { folder.appendingPathComponent("run\($0)") }
        let points = KillHarness.points(
            runs.count, within: full.seconds,
            outputs: [runs[1].appendingPathComponent("m.last.h5")], writeWindow: 0.5,
            label: "train")
        print("kill train: seed \(KillHarness.seed), run \(String(format: "%.2f", full.seconds)) s, kills \(points)")
        var outcomes: [String] = []
        for (run, delay) in zip(runs, points) {
            try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
            let (best, last) = (run.appendingPathComponent("m.h5"), run.appendingPathComponent("m.last.h5"))
            let outcome = try KillHarness.run(train(best), kill: delay, in: folder)
            #expect(outcome.killed || outcome.status == 0, "\(outcome.standardError)")
            var lastStep: Int?
            for checkpoint in [best, last] where FileManager.default.fileExists(atPath: checkpoint.path) {
                let step = try Self.checkpointStep(checkpoint.path)
                #expect(
                    (1...steps).contains(step),
                    "killed \(delay) (seed \(KillHarness.seed)): \(checkpoint.lastPathComponent) at step \(step)")
                if checkpoint == last { lastStep = step }
            }
            // Continue: from the last checkpoint when there is one, else from the start.
            let resumed = try KillHarness.run(train(best, resume: lastStep.map { _ in last }), in: folder)
            #expect(resumed.status == 0, "\(resumed.standardError)")
            if lastStep != nil {
                #expect(resumed.standardError.contains("resuming from"), "\(resumed.standardError)")
            }
            #expect(try Self.checkpointStep(last.path) == steps)
            let history = try HDF5File.open(last.path).shape(of: "/history/train_loss")
            #expect(history == [steps])
            #expect(Fixtures.leftoverTemporaries(in: run).isEmpty, "\(Fixtures.leftoverTemporaries(in: run))")
            outcomes.append(
                outcome.killed ? "killed, last checkpoint \(lastStep.map(String.init) ?? "none")" : "finished")
        }
        print("kill train: outcomes \(outcomes)")
    }
}
