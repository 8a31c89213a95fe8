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
        let secure = try Remote("dicom+tls://ORTHANC@pacs.example:2762")
        #expect(secure == .dimse(aet: "ORTHANC", host: "pacs.example", port: 2762, tls: true))
        #expect(secure.description == "dicom+tls://ORTHANC@pacs.example:2762")
        #expect(try Remote(secure.description) == secure)
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

/// multipart/related bodies as WADO-RS sends them and STOW-RS takes them.
struct MultipartRelatedTests {
    @Test func partsRoundTrip() throws {
        let parts: [(contentType: String, data: Data)] = [
            ("application/dicom", Data([0, 1, 2, 13, 10, 45, 45])), ("application/dicom", Data()),
            ("application/dicom", Data("--not-the-boundary\r\n".utf8))
        ]
        let body = MultipartRelated.encode(parts, boundary: "b0und")
        let parsed = try MultipartRelated.parse(body, boundary: "b0und", source: "test")
        #expect(parsed.map(\.data) == parts.map(\.data))
        #expect(parsed.allSatisfy { $0.headers["content-type"] == "application/dicom" })
        #expect(
            MultipartRelated.boundary(contentType: #"multipart/related; type="application/dicom"; boundary="x y""#)
                == "x y")
        #expect(MultipartRelated.boundary(contentType: "application/json") == nil)
    }

    @Test func malformedBodiesAreErrors() {
        for (body, reason) in [
            ("no boundary here", "no boundary"), ("--b\r\nContent-Type: x\r\n", "no blank line"),
            ("--b\r\n\r\nbytes without an end", "not closed"), ("--bX", "not followed by a line end")
        ] {
            #expect { try MultipartRelated.parse(Data(body.utf8), boundary: "b", source: "u") } throws: {
                "\($0)".contains(reason) && "\($0)".hasPrefix("u: ")
            }
        }
    }

    @Test func credentialsComeFromAFileOrTheEnvironment() throws {
        #expect(try WebCredentials.load(file: nil, environment: ["SLICELAB_DICOMWEB_TOKEN": "t"]) == .bearer("t"))
        #expect(try WebCredentials.load(file: nil, environment: ["SLICELAB_DICOMWEB_BASIC": "u:p"]) == .basic("u:p"))
        #expect(try WebCredentials.load(file: nil, environment: [:]) == nil)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("credentials-\(getpid()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"basic": "user:secret"}"#.utf8).write(to: file)
        #expect(try WebCredentials.load(file: file.path, environment: [:]) == .basic("user:secret"))
        try Data(#"{"user": "x"}"#.utf8).write(to: file)
        #expect { try WebCredentials.load(file: file.path, environment: [:]) } throws: { "\($0)".contains("neither") }
    }
}
