import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

/// The atomic writers' own guarantees: a folder is replaced as a whole, a failed write keeps the previous
/// version, and the temporaries of dead writers are cleared while a live writer's are kept.
struct AtomicWriteTests {
    static func names(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    @Test func aFolderIsReplacedAsAWholeAndKeptWhenTheWriterFails() throws {
        let root = try TestSupport.temporaryFolder("atomic-folder")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("overlays")
        try writeFolderAtomically(to: folder.path) { temporary in
            for name in ["a.png", "b.png"] { try writeAtomically(Data(name.utf8), to: temporary + "/" + name) }
        }
        #expect(Self.names(in: folder) == ["a.png", "b.png"])
        try writeFolderAtomically(to: folder.path) { temporary in
            try writeAtomically(Data("c".utf8), to: temporary + "/c.png")
        }
        #expect(Self.names(in: folder) == ["c.png"])
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try writeFolderAtomically(to: folder.path) { temporary in
                try writeAtomically(Data("d".utf8), to: temporary + "/d.png")
                throw Stop()
            }
        }
        #expect(Self.names(in: folder) == ["c.png"])
        #expect(Self.names(in: root) == ["overlays"])
    }

    @Test func temporariesOfDeadWritersAreRemovedAndThoseOfLiveOnesKept() throws {
        let root = try TestSupport.temporaryFolder("atomic-stale")
        defer { try? FileManager.default.removeItem(at: root) }
        // A process id that does not exist (above /proc/sys/kernel/pid_max) and this live process.
        let dead = ".results.h5.tmp-2147483000-1"
        let live = ".results.h5.tmp-\(getpid())-2"
        let deadFolder = ".overlays.old-2147483000-3"
        for name in [dead, live] {
            #expect(FileManager.default.createFile(atPath: root.path + "/" + name, contents: Data()))
        }
        try FileManager.default.createDirectory(atPath: root.path + "/" + deadFolder, withIntermediateDirectories: true)
        try writeAtomically(Data("new".utf8), to: root.path + "/results.h5")
        try writeFolderAtomically(to: root.path + "/overlays") { _ in }
        #expect(Self.names(in: root) == [live, "overlays", "results.h5"].sorted())
    }
}
