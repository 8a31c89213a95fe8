import Foundation
import SliceLabSupport
import TestSupport
import Testing

@Suite struct OutputLocationTests {
    @Test func missingFoldersAreAcceptedUntouchedAndCreatedByTheWriter() throws {
        let folder = try TestSupport.temporaryFolder()
        let output = folder.appendingPathComponent("runs/2026/results.bin").path
        try prepareOutputLocation(output)
        try prepareOutputLocation(folder.appendingPathComponent("report").path, isFolder: true)
        // Checking creates nothing: a run that then fails on its inputs leaves no trace.
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("runs").path))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("report").path))
        try writeAtomically(Data([1, 2, 3]), to: output)
        #expect(FileManager.default.contents(atPath: output) == Data([1, 2, 3]))
    }

    @Test func aFolderThatCannotExistIsRefusedNamingTheOutput() throws {
        let folder = try TestSupport.temporaryFolder()
        let blocker = folder.appendingPathComponent("a-file").path
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data([1])))
        let output = blocker + "/results.h5"
        do {
            try prepareOutputLocation(output)
            Issue.record("an output below a regular file was accepted")
        } catch let error as FileWriteError {
            #expect("\(error)".contains(output))
        }
    }

    /// A killed writer's temporaries go when the next run checks its output, not only if that run writes the same
    /// file again (a resumed training run may never write a better "best" model); a live writer's stay.
    @Test func checkingAnOutputRemovesDeadWritersTemporaries() throws {
        let folder = try TestSupport.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let dead = folder.appendingPathComponent(".m.h5.tmp-999999999-1").path  // above Linux's largest PID
        let live = folder.appendingPathComponent(".m.h5.tmp-\(getpid())-2").path
        let other = folder.appendingPathComponent(".n.h5.tmp-999999999-3").path
        for path in [dead, live, other] { #expect(FileManager.default.createFile(atPath: path, contents: Data([1]))) }
        try prepareOutputLocation(folder.appendingPathComponent("m.h5").path)
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live) && FileManager.default.fileExists(atPath: other))
    }
}
