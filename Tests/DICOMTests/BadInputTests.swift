import DICOM
import DICOMTestSupport
import Foundation
import TestSupport
import Testing

/// Bad input gives a typed error naming the file and the cause, never a crash or an unbounded allocation.
struct BadInputTests {
    let folder: URL

    init() throws { folder = try TestSupport.temporaryFolder("dicom-bad") }

    private func url(_ name: String) -> URL { folder.appendingPathComponent(name) }

    private func failure(opening path: String, frame: Int? = 0) -> DICOMError? {
        do {
            let file = try DICOMFile(path: path)
            if let frame { _ = try file.modalityFrame(frame) }
            return nil
        } catch let error as DICOMError {
            return error
        } catch {
            return nil
        }
    }

    @Test func textFileIsRefusedAsNotDicom() throws {
        let path = url("notes.dcm").path
        try "patient notes, not an image\n".write(toFile: path, atomically: true, encoding: .utf8)
        let error = try #require(failure(opening: path))
        guard case .unreadable(let file, let reason) = error else {
            Issue.record("got \(error)")
            return
        }
        #expect(file == path)
        #expect(reason.contains("not a DICOM file"))
    }

    @Test func missingFileIsRefused() throws {
        let error = try #require(failure(opening: url("absent.dcm").path))
        #expect("\(error)".contains("absent.dcm"))
        #expect("\(error)".contains("no such file"))
    }

    @Test func fileTruncatedInsideSmallPixelDataIsRefused() throws {
        // The cut falls inside the 40-byte Pixel Data value, which the reader loads with the header.
        let bytes = TestDICOMWriter.ctSlice(stored: Array(repeating: 0, count: 20), position: [0, 0, 0]).bytes()
        let path = url("truncated.dcm").path
        try Data(bytes.dropLast(30)).write(to: URL(fileURLWithPath: path))
        let error = try #require(failure(opening: path))
        guard case .unreadable(let file, _) = error else {
            Issue.record("got \(error)")
            return
        }
        #expect(file == path)
    }

    @Test func fileTruncatedInsideLargePixelDataIsRefused() throws {
        // 256 × 256 × 2 bytes: more than the reader's in-memory limit, so Pixel Data stays on disk until read.
        let stored = [Int16](repeating: 7, count: 256 * 256)
        let bytes = TestDICOMWriter.ctSlice(rows: 256, columns: 256, stored: stored, position: [0, 0, 0]).bytes()
        let path = url("truncated-pixels.dcm").path
        try Data(bytes.dropLast(1000)).write(to: URL(fileURLWithPath: path))
        let error = try #require(failure(opening: path))
        #expect("\(error)".hasPrefix(path + ":"))
    }

    @Test func missingPixelDataIsReportedAsNoPixelData() throws {
        var writer = TestDICOMWriter.ctSlice(stored: Array(repeating: 0, count: 20), position: [0, 0, 0])
        writer.remove(.pixelData)
        let path = try writer.write(to: url("nopixels.dcm"))
        let file = try DICOMFile(path: path)
        #expect(!file.hasPixelData)
        #expect(throws: DICOMError.noPixelData(file: path)) { try file.modalityFrame(0) }
    }

    @Test func shortPixelDataIsRefusedWithBothLengths() throws {
        let writer = TestDICOMWriter.ctSlice(
            rows: 4, columns: 5, stored: Array(repeating: 0, count: 12),
            position: [0, 0, 0])
        let path = try writer.write(to: url("short.dcm"))
        #expect(throws: DICOMError.shortPixelData(file: path, expectedBytes: 40, actualBytes: 24)) {
            try DICOMFile(path: path)
        }
    }

    @Test func unsupportedTransferSyntaxIsNamed() throws {
        var writer = TestDICOMWriter.ctSlice(stored: Array(repeating: 0, count: 20), position: [0, 0, 0])
        writer.transferSyntaxUID = "1.2.840.10008.1.2.4.100"  // MPEG-2
        let fragment: [UInt8] = [0x00, 0x00, 0x01, 0xB3, 0, 0]
        let items =
            TestDICOMWriter.uint16([0xFFFE, 0xE000]) + TestDICOMWriter.uint32(0)
            + TestDICOMWriter.uint16([0xFFFE, 0xE000]) + TestDICOMWriter.uint32(UInt32(fragment.count)) + fragment
            + TestDICOMWriter.uint16([0xFFFE, 0xE0DD]) + TestDICOMWriter.uint32(0)
        writer.set(.pixelData, "OB", items, claimedLength: 0xFFFF_FFFF)
        let path = try writer.write(to: url("mpeg.dcm"))
        let file = try DICOMFile(path: path)
        #expect(throws: DICOMError.unsupportedTransferSyntax(uid: "1.2.840.10008.1.2.4.100", file: path)) {
            try file.modalityFrame(0)
        }
    }

    @Test func impossibleDimensionsAreRefusedBeforeAllocating() throws {
        var writer = TestDICOMWriter.ctSlice(stored: Array(repeating: 0, count: 20), position: [0, 0, 0])
        writer.set(.rows, us: 65535)
        writer.set(.columns, us: 65535)
        writer.set(.numberOfFrames, "IS", "100000")
        let path = try writer.write(to: url("huge-dimensions.dcm"))
        let error = try #require(failure(opening: path))
        guard case .impossibleDimensions(path, _) = error else {
            Issue.record("got \(error)")
            return
        }

        writer.set(.rows, us: 0)
        let zeroPath = try writer.write(to: url("zero-rows.dcm"))
        let zeroError = try #require(failure(opening: zeroPath))
        guard case .impossibleDimensions(zeroPath, _) = zeroError else {
            Issue.record("got \(zeroError)")
            return
        }
    }

    @Test func tenGigabytesOfClaimedFramesAreRefusedWithoutAllocating() throws {
        // 20 000 frames of 512 × 512 × 2 bytes claim 10.5 GB; the file holds 40 bytes.
        var writer = TestDICOMWriter.ctSlice(stored: Array(repeating: 0, count: 20), position: [0, 0, 0])
        writer.set(.rows, us: 512)
        writer.set(.columns, us: 512)
        writer.set(.numberOfFrames, "IS", "20000")
        let path = try writer.write(to: url("ten-gigabytes.dcm"))
        let error = try #require(failure(opening: path))
        guard case .shortPixelData(path, 10_485_760_000, 40) = error else {
            Issue.record("got \(error)")
            return
        }
    }

    @Test func pixelDataClaimingFourGigabytesIsRefused() throws {
        // The element claims 0xFFFFFFF0 bytes; the file ends 40 bytes later.
        var writer = TestDICOMWriter.ctSlice(stored: Array(repeating: 0, count: 20), position: [0, 0, 0])
        writer.set(.pixelData, "OW", TestDICOMWriter.uint16(Array(repeating: 0, count: 20)), claimedLength: 0xFFFF_FFF0)
        let path = try writer.write(to: url("four-gigabytes.dcm"))
        let error = try #require(failure(opening: path))
        #expect("\(error)".hasPrefix(path + ":"))
    }

    @Test func frameOutsideTheFileIsRefused() throws {
        let path = try TestDICOMWriter.ctSlice(stored: Array(repeating: 0, count: 20), position: [0, 0, 0])
            .write(to: url("one-frame.dcm"))
        let file = try DICOMFile(path: path)
        #expect(throws: DICOMError.frameOutOfRange(file: path, frame: 3, frameCount: 1)) { try file.modalityFrame(3) }
    }
}
