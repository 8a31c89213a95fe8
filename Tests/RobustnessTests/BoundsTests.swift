import Foundation
import ImageFiles
import TestSupport
import Testing

/// Headers that claim absurd sizes are refused before anything is allocated, with the limit named, and the
/// limit moves with `--max-memory`.
struct BoundsTests {
    @Test func dicomClaiming65535Squared10000FramesIsRefusedNamingTheLimit() throws {
        let folder = try TestSupport.temporaryFolder("bounds-dicom")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("huge.dcm").path
        try Data(
            Fixtures.ctFile(
                rows: 65535, columns: 65535, frames: 10000, stored: [1, 2, 3, 4], position: 0,
                instance: 1)
        ).write(to: URL(fileURLWithPath: path))
        let out = folder.appendingPathComponent("out.h5").path
        for arguments in [["info", path], ["convert", path, out]] {
            let result = try TestSupport.slicelab(arguments)
            #expect(result.status == 1, "\(arguments): \(result.standardError)")
            #expect(
                result.standardError.contains(path)
                    && result.standardError.contains("one of the 10000 frames (65535 × 65535 × 1 values)")
                    && result.standardError.contains("read limit of 4 GiB")
                    && result.standardError.contains("--max-memory"), "\(result.standardError)")
        }
        // Compressed frames of a size the limit allows, but 10000 of them: the whole file is refused.
        let compressed = folder.appendingPathComponent("compressed.dcm").path
        try Data(
            Fixtures.ctFile(
                rows: 4096, columns: 4096, frames: 10000, stored: [1, 2, 3, 4], position: 0,
                instance: 1, encapsulated: true)
        ).write(to: URL(fileURLWithPath: compressed))
        let whole = try TestSupport.slicelab(["convert", compressed, out])
        #expect(
            whole.status == 1 && whole.standardError.contains("10000 frames of 4096 × 4096")
                && whole.standardError.contains("625 GiB") && whole.standardError.contains("read limit of 4 GiB"),
            "\(whole.standardError)")
        #expect(!FileManager.default.fileExists(atPath: out))
        // Raised past the claim (156 TiB), the limit no longer refuses it: the missing pixels do.
        let raised = try TestSupport.slicelab(["convert", path, out, "--max-memory", "200T"])
        #expect(raised.status == 1 && raised.standardError.contains("truncated"), "\(raised.standardError)")
    }

    @Test func maxMemoryLowersTheLimitForARealMultiFrameFile() throws {
        let folder = try TestSupport.temporaryFolder("bounds-frames")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("frames.dcm").path
        let stored = (0..<(8 * 32 * 32)).map { UInt16($0 % 4096) }
        try Data(Fixtures.ctFile(rows: 32, columns: 32, frames: 8, stored: stored, position: 0, instance: 1))
            .write(to: URL(fileURLWithPath: path))
        let out = folder.appendingPathComponent("out.h5").path
        let refused = try TestSupport.slicelab(["convert", path, out, "--max-memory", "16K"])
        #expect(
            refused.status == 1 && refused.standardError.contains("32 KiB")
                && refused.standardError.contains("read limit of 16 KiB"), "\(refused.standardError)")
        let accepted = try TestSupport.slicelab(["convert", path, out])
        #expect(accepted.status == 0, "\(accepted.standardError)")
        #expect(try HDF5File.open(out).shape(of: "/image") == [8, 32, 32])
        let malformed = try TestSupport.slicelab(["convert", path, out, "--max-memory", "lots"])
        #expect(malformed.status == 2 && malformed.standardError.contains("--max-memory lots"))
    }

    /// A PNG whose header says 10⁶ × 10⁶ pixels (followed by a token IDAT and IEND).
    static func hugePNG(at path: String) throws {
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            return be32(UInt32(data.count)) + body + be32(crc32(body))
        }
        let header = be32(1_000_000) + be32(1_000_000) + [8, 0, 0, 0, 0]  // 8-bit gray, no interlace
        let bytes: [UInt8] =
            [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header)
            + chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) + chunk("IEND", [])
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static func be32(_ value: UInt32) -> [UInt8] { (0..<4).reversed().map { UInt8(value >> (8 * $0) & 0xFF) } }

    /// CRC-32 (ISO 3309, the PNG chunk checksum).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    @Test func pngClaimingTenToTheSixSquaredIsRefusedNamingTheLimit() throws {
        let folder = try TestSupport.temporaryFolder("bounds-png")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("huge.png").path
        try Self.hugePNG(at: path)
        #expect {
            _ = try PNGImage.read(path)
        } throws: { error in
            guard case ImageFileError.tooLarge(let file, let reason) = error else { return false }
            return file == path && reason.contains("1000000 × 1000000 × 1") && reason.contains("read limit of 4 GiB")
        }
        let cluster = try TestSupport.slicelab([
            "cluster", path, "--method", "otsu", "--classes", "2",
            "--out", folder.appendingPathComponent("c.h5").path
        ])
        #expect(
            cluster.status == 1 && cluster.standardError.contains(path)
                && cluster.standardError.contains("read limit of 4 GiB"), "\(cluster.standardError)")
        let evaluate = try TestSupport.slicelab([
            "evaluate", "--pred", path, "--ref", path,
            "--out", folder.appendingPathComponent("r.h5").path
        ])
        #expect(evaluate.status == 1 && evaluate.standardError.contains("read limit"), "\(evaluate.standardError)")
    }

    @Test func hdf5DatasetsWithAbsurdExtentsAreRefusedNamingTheLimit() throws {
        let folder = try TestSupport.temporaryFolder("bounds-hdf5")
        defer { try? FileManager.default.removeItem(at: folder) }
        let image = folder.appendingPathComponent("image.h5").path
        let labels = folder.appendingPathComponent("labels.h5").path
        // Chunked and never written: the file stays tiny whatever the extents claim.
        try HDF5File.write(to: image) {
            try $0.createDataset(
                "/image", .float32, shape: [100_000, 1_000_000, 1_000_000],
                chunks: [1, 256, 256])
        }
        try HDF5File.write(to: labels) {
            try $0.createDataset(
                "/labels", .uint8, shape: [50_000, 1 << 20, 1 << 20],
                chunks: [1, 256, 256])
        }
        let model = try Fixtures.model(in: folder)
        let runs: [[String]] = [
            [
                "cluster", image, "--method", "otsu", "--classes", "2", "--out",
                folder.appendingPathComponent("c.h5").path
            ],
            ["segment", image, "--model", model, "--out", folder.appendingPathComponent("s.h5").path],
            ["evaluate", "--pred", labels, "--ref", labels, "--out", folder.appendingPathComponent("r.h5").path]
        ]
        for arguments in runs {
            let result = try TestSupport.slicelab(arguments)
            #expect(result.status == 1, "\(arguments): \(result.standardError)")
            #expect(
                result.standardError.contains("read limit of 4 GiB") && result.standardError.contains("--max-memory"),
                "\(arguments): \(result.standardError)")
        }
    }
}
