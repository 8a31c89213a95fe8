import Foundation
import TestSupport
import Testing

/// `mpirun -np 2 slicelab evaluate|compare|segment` (issue #20): each rank runs its shard, rank 0 merges, and
/// the output equals one process's bit for bit; a rank that fails or dies fails the job and writes nothing.
@Suite(.serialized) struct ShardedJobTests {
    /// Runs `arguments` under `mpirun -np 2`; nil (with a recorded issue) when Open MPI is missing.
    static func mpirun(_ arguments: [String]) throws -> TestSupport.ProcessResult? {
        guard let command = DataParallelTrainingTests.mpirun(arguments) else {
            Issue.record("Open MPI's mpirun is not installed (make setup installs openmpi-bin)")
            return nil
        }
        return try TestSupport.run(command[0], Array(command.dropFirst()), timeout: 300)
    }

    /// No part or parts folder is left beside the output.
    static func expectNoParts(in folder: URL) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!names.contains { $0.contains(".parts-") }, "\(names)")
    }

    @Test func evaluateAsTwoRanksWritesTheSingleProcessFile() throws {
        let folder = try TestSupport.temporaryFolder()
        let (predictions, references) = try ShardTests.makeLabelFolders(in: folder)
        let results = folder.appendingPathComponent("results.h5").path
        let common = [
            "evaluate", "--pred", predictions, "--ref", references, "--num-classes", "3", "--spacing",
            "2,0.5,0.5", "--run", "model", "--out", results
        ]
        let single = try TestSupport.slicelab(common)
        #expect(single.status == 0, "\(single.standardError)")
        let singlePath = folder.appendingPathComponent("single.h5").path
        try FileManager.default.moveItem(atPath: results, toPath: singlePath)
        guard let job = try Self.mpirun(common) else { return }
        #expect(job.status == 0, "\(job.standardError)")
        #expect(job.standardOutput.contains("merged 2 ranks: 1 run(s) of 7 cases"), "\(job.standardOutput)")
        try ShardTests.expectSameResults(singlePath, results)
        try Self.expectNoParts(in: folder)
        // --shard is one process's way to pick a shard; under a launcher every rank has its own.
        guard let both = try Self.mpirun(common + ["--shard", "0/2", "--overwrite"]) else { return }
        #expect(both.status == 2 && both.standardError.contains("leave --shard out"), "\(both.standardError)")
    }

    /// A skipped bad case is skipped by the rank that holds it, as by one process.
    @Test func compareAsTwoRanksWithASkippedCaseWritesTheSingleProcessFile() throws {
        let folder = try TestSupport.temporaryFolder()
        let set = try CompareTests.makeSet(in: folder, count: 9)
        let model = try CompareTests.makeModel(in: folder)
        try Data("not a PNG".utf8).write(to: set.appendingPathComponent("images/case06.png"))
        let results = folder.appendingPathComponent("results.h5").path
        let common = [
            "compare", set.path, "--model", model, "--classical", "kmeans:space=gray,map=train-vote",
            "--post", "largest-component", "--threads", "1", "--out", results
        ]
        let single = try TestSupport.slicelab(common + ["--skip-bad"])
        #expect(single.status == 0, "\(single.standardError)")
        let singlePath = folder.appendingPathComponent("single.h5").path
        try FileManager.default.moveItem(atPath: results, toPath: singlePath)
        guard let job = try Self.mpirun(common + ["--skip-bad"]) else { return }
        #expect(job.status == 0, "\(job.standardError)")
        #expect(job.standardError.contains("slicelab compare: skipped case06"), "\(job.standardError)")
        #expect(
            job.standardOutput.contains("merged 2 ranks: 3 run(s) of 5 cases, 2 comparison(s)"),
            "\(job.standardOutput)")
        try ShardTests.expectSameResults(singlePath, results)

        // Without --skip-bad compare reads every case before it starts, so both ranks fail as one process would.
        try FileManager.default.removeItem(atPath: results)
        guard let failing = try Self.mpirun(common) else { return }
        #expect(failing.status == 1 && failing.standardError.contains("case06"), "\(failing.standardError)")
        #expect(!FileManager.default.fileExists(atPath: results))
        try Self.expectNoParts(in: folder)
    }

    @Test func segmentAFolderAsTwoRanksWritesTheSingleProcessFolder() throws {
        let folder = try TestSupport.temporaryFolder()
        let set = try CompareTests.makeSet(in: folder, count: 5)
        let model = try CompareTests.makeModel(in: folder)
        let images = set.appendingPathComponent("images")
        try Data("not a PNG".utf8).write(to: images.appendingPathComponent("case02.png"))
        let out = folder.appendingPathComponent("out").path
        let common = ["segment", images.path, "--model", model, "--skip-bad", "--threads", "1", "--out", out]
        let single = try TestSupport.slicelab(common)
        #expect(single.status == 0, "\(single.standardError)")
        let singleFolder = folder.appendingPathComponent("single").path
        try FileManager.default.moveItem(atPath: out, toPath: singleFolder)
        guard let job = try Self.mpirun(common) else { return }
        #expect(job.status == 0, "\(job.standardError)")
        #expect(job.standardOutput.contains("merged 2 ranks: 4 segmented case(s)"), "\(job.standardOutput)")
        #expect(job.standardError.contains("slicelab segment: skipped case02"), "\(job.standardError)")
        let names = try FileManager.default.contentsOfDirectory(atPath: singleFolder).sorted()
        #expect(names == ["case00.h5", "case01.h5", "case03.h5", "case04.h5", "segment.json"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == names)
        #expect(
            FileManager.default.contents(atPath: singleFolder + "/segment.json")
                == FileManager.default.contents(atPath: out + "/segment.json"))
        for name in names where name.hasSuffix(".h5") {
            try ShardTests.expectSameResults(singleFolder + "/" + name, out + "/" + name)
        }
        try Self.expectNoParts(in: folder)

        // Without --skip-bad only the rank holding case02 fails: the other names it, and nothing is written.
        try FileManager.default.removeItem(atPath: out)
        guard let failing = try Self.mpirun(common.filter { $0 != "--skip-bad" }) else { return }
        #expect(failing.status == 1 && failing.standardError.contains("case02"), "\(failing.standardError)")
        #expect(
            failing.standardError.contains("failed (see its error above); nothing was written to \(out)"),
            "\(failing.standardError)")
        #expect(!FileManager.default.fileExists(atPath: out))
        try Self.expectNoParts(in: folder)
    }

    /// SIGKILL of rank 1 while the ranks segment: the job ends non-zero with a line naming rank 1, and no output
    /// folder appears.
    @Test(.timeLimit(.minutes(5))) func killedRankFailsTheJobAndWritesNothing() throws {
        let folder = try TestSupport.temporaryFolder()
        let set = try CompareTests.makeSet(in: folder, count: 12)
        let model = try CompareTests.makeModel(in: folder)
        let out = folder.appendingPathComponent("out").path
        let tag = UUID().uuidString
        guard
            let command = DataParallelTrainingTests.mpirun(
                [
                    "segment", set.appendingPathComponent("images").path, "--model", model, "--threads", "1", "--out",
                    out
                ],
                environment: ["SLICELAB_TEST_TAG": tag])
        else {
            Issue.record("Open MPI's mpirun is not installed (make setup installs openmpi-bin)")
            return
        }
        let (job, errors) = try DataParallelTrainingTests.start(command, environment: ["SLICELAB_TEST_TAG": tag])
        defer { if job.isRunning { kill(job.processIdentifier, SIGKILL) } }
        var victim: pid_t?
        let deadline = Date().addingTimeInterval(60)
        while victim == nil, job.isRunning, Date() < deadline {
            victim = DataParallelTrainingTests.process(rank: 1, tag: tag)
            if victim == nil { usleep(20_000) }
        }
        guard let victim else {
            Issue.record("rank 1 of the job was not found in /proc")
            return
        }
        kill(victim, SIGKILL)
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        job.waitUntilExit()
        #expect(job.terminationStatus != 0)
        #expect(text.split(separator: "\n").contains { $0.contains("rank 1") }, "\(text)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
