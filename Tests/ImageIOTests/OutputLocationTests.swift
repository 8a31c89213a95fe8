import Foundation
import ImageIO
import Testing
import TestSupport

@Suite struct OutputLocationTests {
    @Test func missingFoldersAreCreatedBeforeTheWorkStarts() throws {
        let folder = try TestSupport.temporaryFolder()
        let output = folder.appendingPathComponent("runs/2026/results.h5").path
        try prepareOutputLocation(output)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("runs/2026").path,
                                               isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(!FileManager.default.fileExists(atPath: output))
        try prepareOutputLocation(folder.appendingPathComponent("report").path, isFolder: true)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("report").path))
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
