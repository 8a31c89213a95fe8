import Foundation
import ImageIO
import Testing
import TestSupport

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
        } catch let error as ImageIOError {
            #expect("\(error)".contains(output))
        }
    }
}
