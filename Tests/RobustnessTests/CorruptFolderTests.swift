import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

/// A folder of 1,000 small DICOM slices of which 5 % are corrupt (truncated, garbage, lying lengths): every
/// batch command completes, lists each corrupt file with its reason, and counts them in its summary.
struct CorruptFolderTests {
    static let size = 16

    /// Stored values of slice `index` (modality value = stored − 1024).
    static func stored(_ index: Int) -> [UInt16] {
        (0..<(size * size)).map { UInt16((index * 7 + $0 * 3) % 4096) }
    }

    /// Writes `count` slices of one series (slice i at z = i mm), corrupting a seeded 5 % of them in five ways;
    /// returns the corrupt files' paths.
    static func writeSeries(to folder: URL, count: Int, seed: UInt64) throws -> Set<String> {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var random = SeededGenerator(seed: seed)
        let corrupt = Set(Array(0..<count).shuffled(using: &random).prefix(count / 20))
        var paths: Set<String> = []
        for index in 0..<count {
            var bytes = Fixtures.ctFile(
                rows: size, columns: size, stored: stored(index), position: Double(index),
                instance: index + 1)
            let path = folder.appendingPathComponent(String(format: "IM%04d.dcm", index)).path
            if corrupt.contains(index) {
                paths.insert(path)
                switch index % 5 {
                case 0: bytes.removeLast(100 + Int(random.next() % 200))  // truncated in the pixel data
                case 1: bytes = Array(bytes.prefix(140 + Int(random.next() % 300)))  // truncated in the header
                case 2:
                    bytes = (0..<(64 + Int(random.next() % 2000))).map { _ in UInt8.random(in: 0...255, using: &random)
                    }
                case 3:  // Pixel Data claims 2 GiB
                    bytes = Fixtures.ctFile(
                        rows: size, columns: size, stored: stored(index), position: Double(index),
                        instance: index + 1, claimedPixelLength: 0x7FFF_FFF0)
                default:  // Patient's Name claims 65,520 bytes that are not there
                    let tag: [UInt8] = [0x10, 0x00, 0x10, 0x00] + Array("PN".utf8)
                    if let at = (0...(bytes.count - tag.count)).first(where: {
                        Array(bytes[$0..<($0 + tag.count)]) == tag
                    }) {
                        bytes[at + 6] = 0xF0
                        bytes[at + 7] = 0xFF
                    }
                }
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
        return paths
    }

    @Test func aThousandFilesWithFivePercentCorruptAreScannedConvertedAndCounted() throws {
        let folder = try TestSupport.temporaryFolder("corrupt-folder")
        defer { try? FileManager.default.removeItem(at: folder) }
        let series = folder.appendingPathComponent("series")
        let corrupt = try Self.writeSeries(to: series, count: 1000, seed: 20_261_130)
        #expect(corrupt.count == 50)

        let info = try TestSupport.slicelab(["info", series.path])
        #expect(info.status == 0, "\(info.standardError)")
        #expect(info.standardOutput.contains("Skipped 50 files:"))
        #expect(
            info.standardOutput.contains("Scanned 1000 files: 950 in 1 series, 50 skipped."), "\(info.standardOutput)")
        let listed = info.standardOutput.split(separator: "\n").filter { $0.hasPrefix("  /") }
        #expect(Set(listed.compactMap { $0.dropFirst(2).components(separatedBy: ": ").first }) == corrupt)
        #expect(listed.allSatisfy { $0.components(separatedBy: ": ").count >= 2 && !$0.hasSuffix(": ") })

        let out = folder.appendingPathComponent("series.h5").path
        let convert = try TestSupport.slicelab(["convert", series.path, out])
        #expect(convert.status == 0, "\(convert.standardError)")
        let skipped = convert.standardOutput.split(separator: "\n").filter { $0.hasPrefix("skipped ") }
        #expect(Set(skipped.compactMap { $0.dropFirst(8).components(separatedBy: ": ").first }) == corrupt)
        #expect(
            convert.standardOutput.contains("converted 950 of 1000 files into 1 series, 50 skipped"),
            "\(convert.standardOutput)")
        let volume = try HDF5File.open(out).read("/image", as: Float.self)
        #expect(volume.shape == [950, Self.size, Self.size])
        let kept = (0..<1000).filter {
            !corrupt.contains(series.appendingPathComponent(String(format: "IM%04d.dcm", $0)).path)
        }
        let expected = kept.flatMap { Self.stored($0).map { Float(Int($0) - 1024) } }
        #expect(volume.values == expected)
    }

    @Test func segmentOfAFolderWithCorruptFilesListsAndCountsThem() throws {
        let folder = try TestSupport.temporaryFolder("corrupt-segment")
        defer { try? FileManager.default.removeItem(at: folder) }
        let series = folder.appendingPathComponent("series")
        let corrupt = try Self.writeSeries(to: series, count: 40, seed: 7)
        let model = try Fixtures.model(in: folder)
        let out = folder.appendingPathComponent("labels.h5").path
        let result = try TestSupport.slicelab(["segment", series.path, "--model", model, "--out", out, "--threads", "2"]
        )
        #expect(result.status == 0, "\(result.standardError)")
        for path in corrupt { #expect(result.standardError.contains("skipped \(path): "), "\(path)") }
        #expect(result.standardError.contains("38 slice(s) segmented, 2 file(s) skipped"), "\(result.standardError)")
        #expect(try HDF5File.open(out).shape(of: "/labels") == [38, Self.size, Self.size])
    }
}
