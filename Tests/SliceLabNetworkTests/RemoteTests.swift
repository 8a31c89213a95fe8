import Foundation
import SliceLabNetwork
import Testing

/// Remotes as users write them, the names of a remotes file, and UIDs as file names.
struct RemoteTests {
    @Test func remotesParse() throws {
        #expect(
            try Remote("dicom://ORTHANC@pacs.example:4242") == .dimse(aet: "ORTHANC", host: "pacs.example", port: 4242))
        #expect(
            try Remote("dicomweb://127.0.0.1:8042/dicom-web")
                == .web(url: URL(string: "http://127.0.0.1:8042/dicom-web")!))
        #expect(try Remote("https://pacs/dicom-web") == .web(url: URL(string: "https://pacs/dicom-web")!))
        #expect(try Remote("pacs", remotes: ["pacs": "dicom://A@h:104"]) == .dimse(aet: "A", host: "h", port: 104))
        for (text, reason) in [
            ("dicom://h:104", "called AE title"), ("dicom://THIRTEENCHARSXXXXX@h:104", "called AE title"),
            ("dicom://A@h", "no port"), ("ftp://h", "unknown scheme"), ("nothing", "expected dicom://"),
            ("dicom://A@:104", "no host")
        ] {
            #expect { try Remote(text) } throws: { "\($0)".contains(reason) }
        }
    }

    @Test func remotesFilesAreJSONObjectsOfNames() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("remotes-\(getpid()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"pacs": "dicom://ORTHANC@10.0.0.5:4242"}"#.utf8).write(to: file)
        #expect(try Remote.remotes(file: file.path) == ["pacs": "dicom://ORTHANC@10.0.0.5:4242"])
        try Data("[1]".utf8).write(to: file)
        #expect { try Remote.remotes(file: file.path) } throws: { "\($0)".contains("not a JSON object") }
    }

    @Test func onlyUIDsBecomeFileNames() {
        for good in ["1.2.840.10008.5.1.4.1.1.2", "2.25.177857397167048564025350043556128559548"] {
            #expect(DICOMUID.isValid(good))
        }
        for bad in ["", ".", "..", "../1.2", "1.2/3", "1.2.3a", String(repeating: "1", count: 65), "1 2"] {
            #expect(!DICOMUID.isValid(bad), "\(bad)")
        }
    }
}
