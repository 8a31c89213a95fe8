import Foundation
import ImageFiles
import TestSupport
import Testing

/// Writes that fail part-way (a full disk, a file-size limit, a read-only folder) end with one error line naming
/// the file, leave the previous output byte for byte, and leave no temporary behind.
///
/// The file-size limit (`ulimit -f`, RLIMIT_FSIZE: writes past it fail with EFBIG) runs everywhere; a real full
/// disk and a read-only folder need a small tmpfs, which only root can mount: without it those tests are
/// disabled and say why.
@Suite(.serialized) struct WriteFailureTests {
    /// The outputs one scenario writes and re-writes: the command and the file it must not corrupt.
    struct Scenario {
        let name: String
        let arguments: [String]
        let output: String
        /// File names the error may name (train checks its --out folder before it starts, and names --out).
        var named: [String] = []
    }

    /// Inputs of every scenario, made once per test: a DICOM series, a label set, a model and a training set.
    final class Inputs {
        let folder: URL
        let series: String
        let model: String
        let labels: String
        let trainingSet: String

        init() throws {
            folder = try TestSupport.temporaryFolder("write-failure")
            let seriesURL = folder.appendingPathComponent("series")
            try FileManager.default.createDirectory(at: seriesURL, withIntermediateDirectories: true)
            for index in 0..<12 {
                let stored = (0..<(64 * 64)).map { UInt16(($0 * 13 + index * 101) % 4096) }
                try Data(
                    Fixtures.ctFile(rows: 64, columns: 64, stored: stored, position: Double(index), instance: index + 1)
                )
                .write(to: seriesURL.appendingPathComponent(String(format: "IM%02d.dcm", index)))
            }
            series = seriesURL.path
            model = try Fixtures.model(in: folder)
            labels = try KillTests.labelFolder(folder, "labels", count: 6, size: 64, shift: 0)
            trainingSet = try Fixtures.labeledSet(in: folder, count: 4, trainCount: 4, size: 32).path
        }

        deinit { try? FileManager.default.removeItem(at: folder) }

        /// convert (HDF5 and PNG), segment, evaluate and train, each writing into `outputs`.
        func scenarios(in outputs: URL) -> [Scenario] {
            let out = { outputs.appendingPathComponent($0).path }
            return [
                Scenario(name: "convert", arguments: ["convert", series, out("volume.h5")], output: out("volume.h5")),
                Scenario(
                    name: "convert png", arguments: ["convert", series, out("slice.png"), "--bits", "16"],
                    output: out("slice.png")),
                Scenario(
                    name: "segment",
                    arguments: [
                        "segment", series, "--model", model, "--out", out("labels.h5"),
                        "--probabilities", "--threads", "2"
                    ], output: out("labels.h5")),
                Scenario(
                    name: "evaluate",
                    arguments: [
                        "evaluate", "--pred", labels, "--ref", labels, "--out",
                        out("results.h5"), "--run", "again", "--overwrite"
                    ],
                    output: out("results.h5")),
                Scenario(
                    name: "train",
                    arguments: [
                        "train", trainingSet, "--arch", "deeplabv3_mobilenet_v2",
                        "--aspp-channels", "8", "--output-stride", "16", "--num-classes",
                        "3", "--steps", "1", "--batch", "1", "--crop", "32",
                        "--threads", "2", "--out", out("model.h5")
                    ],
                    output: out("model.last.h5"), named: ["model.h5"])
            ]
        }
    }

    /// Runs `slicelab` under a file-size limit of `bytes` (SIGXFSZ ignored, so writes fail with EFBIG).
    static func runLimited(_ arguments: [String], fileSizeLimit bytes: Int) throws -> TestSupport.ProcessResult {
        let blocks = max(1, bytes / 1024)  // bash counts ulimit -f in 1024-byte blocks
        return try TestSupport.run(
            "/bin/bash",
            [
                "-c", "ulimit -f \(blocks) && trap '' XFSZ && exec \"$0\" \"$@\"",
                TestSupport.slicelabBinary
            ] + arguments)
    }

    /// Checks one failed write: exit 1, one error line naming the output, the previous bytes, no temporaries.
    static func expectCleanFailure(
        _ result: TestSupport.ProcessResult, _ scenario: Scenario, previous: Data?,
        outputs: URL, cause: String
    ) {
        #expect(result.status == 1, "\(scenario.name): \(result.standardError)")
        let errorLines = result.standardError.split(separator: "\n").filter { $0.contains("error:") }
        let names = [(scenario.output as NSString).lastPathComponent] + scenario.named
        #expect(
            errorLines.count == 1 && names.contains { errorLines[0].contains($0) },
            "\(scenario.name): \(result.standardError)")
        #expect(result.standardError.contains(cause), "\(scenario.name): \(result.standardError)")
        #expect(Fixtures.bytes(scenario.output) == previous, "\(scenario.name): the previous output changed")
        #expect(
            Fixtures.leftoverTemporaries(in: outputs).isEmpty,
            "\(scenario.name): \(Fixtures.leftoverTemporaries(in: outputs))")
    }

    @Test func aFileSizeLimitFailsEachWriterCleanlyAndKeepsThePreviousOutput() throws {
        let inputs = try Inputs()
        let outputs = inputs.folder.appendingPathComponent("outputs")
        try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
        for scenario in inputs.scenarios(in: outputs) {
            let first = try TestSupport.slicelab(scenario.arguments)
            #expect(first.status == 0, "\(scenario.name): \(first.standardError)")
            let previous = Fixtures.bytes(scenario.output)
            let size = previous?.count ?? 0
            // Enough for the evaluate update's copy of the previous file, not for the new one.
            let limit = scenario.name == "evaluate" ? size + 1024 : size / 2
            let result = try Self.runLimited(scenario.arguments, fileSizeLimit: limit)
            Self.expectCleanFailure(result, scenario, previous: previous, outputs: outputs, cause: "File too large")
        }
    }

    /// Mounts a tmpfs of `megabytes` at `folder` (root only); nil when this process cannot.
    static func mountTmpfs(at folder: URL, megabytes: Int) throws -> Bool {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard getuid() == 0 else { return false }
        let mount = try TestSupport.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", folder.path])
        return mount.status == 0
    }

    static func unmount(_ folder: URL) {
        _ = try? TestSupport.run("/bin/umount", [folder.path])
    }

    /// Fills the file system holding `folder` until `free` bytes remain; returns the filler.
    static func fill(_ folder: URL, leaving free: Int) throws -> URL {
        let filler = folder.appendingPathComponent("filler")
        _ = FileManager.default.createFile(atPath: filler.path, contents: nil)  // the handle below throws if not
        let handle = try FileHandle(forWritingTo: filler)
        let block = Data(repeating: 0xA5, count: 1 << 20)
        var written = 0
        while (try? handle.write(contentsOf: block)) != nil { written += block.count }
        for size in [4096, 512] { while (try? handle.write(contentsOf: Data(count: size))) != nil { written += size } }
        try handle.close()
        var status = statvfs()
        statvfs(folder.path, &status)
        let available = Int(status.f_bavail) * Int(status.f_frsize)
        let total = (try FileManager.default.attributesOfItem(atPath: filler.path)[.size] as? Int) ?? written
        truncate(filler.path, off_t(max(0, total - max(0, free - available))))
        return filler
    }

    static let canMount: Bool = {
        guard getuid() == 0, let folder = try? TestSupport.temporaryFolder("mount-probe") else { return false }
        defer { try? FileManager.default.removeItem(at: folder) }
        guard (try? mountTmpfs(at: folder, megabytes: 1)) == true else { return false }
        unmount(folder)
        return true
    }()

    @Test(.enabled(if: canMount, "needs root to mount a tmpfs; the file-size limit test covers the writers"))
    func aFullDiskFailsEachWriterCleanlyAndKeepsThePreviousOutput() throws {
        let inputs = try Inputs()
        let disk = inputs.folder.appendingPathComponent("disk")
        #expect(try Self.mountTmpfs(at: disk, megabytes: 160))
        defer { Self.unmount(disk) }
        for scenario in inputs.scenarios(in: disk) {
            let first = try TestSupport.slicelab(scenario.arguments)
            #expect(first.status == 0, "\(scenario.name): \(first.standardError)")
            let previous = Fixtures.bytes(scenario.output)
            // Nothing left, except for evaluate: room for its copy of the previous file (tmpfs counts 4 KiB pages).
            let pages = ((previous?.count ?? 0) + 4095) / 4096
            let filler = try Self.fill(disk, leaving: scenario.name == "evaluate" ? pages * 4096 : 0)
            let result = try TestSupport.slicelab(scenario.arguments)
            Self.expectCleanFailure(
                result, scenario, previous: previous, outputs: disk, cause: "No space left on device")
            try FileManager.default.removeItem(at: filler)
            let again = try TestSupport.slicelab(scenario.arguments)
            #expect(again.status == 0, "\(scenario.name) with space again: \(again.standardError)")
        }
    }

    @Test(.enabled(if: canMount, "needs root to mount a read-only tmpfs (root ignores chmod)"))
    func aReadOnlyFolderFailsEachWriterCleanlyAndKeepsThePreviousOutput() throws {
        let inputs = try Inputs()
        let disk = inputs.folder.appendingPathComponent("readonly")
        #expect(try Self.mountTmpfs(at: disk, megabytes: 160))
        defer { Self.unmount(disk) }
        var previous: [String: Data?] = [:]
        for scenario in inputs.scenarios(in: disk) {
            let first = try TestSupport.slicelab(scenario.arguments)
            #expect(first.status == 0, "\(scenario.name): \(first.standardError)")
            previous[scenario.name] = Fixtures.bytes(scenario.output)
        }
        let remount = try TestSupport.run("/bin/mount", ["-o", "remount,ro", disk.path])
        #expect(remount.status == 0, "\(remount.standardError)")
        #expect(!FileManager.default.createFile(atPath: disk.appendingPathComponent("probe").path, contents: Data()))
        for scenario in inputs.scenarios(in: disk) {
            let result = try TestSupport.slicelab(scenario.arguments)
            Self.expectCleanFailure(
                result, scenario, previous: previous[scenario.name] ?? nil, outputs: disk,
                cause: "Read-only file system")
        }
    }
}
