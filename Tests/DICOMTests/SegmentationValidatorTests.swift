import DICOM
import DICOMTestSupport
import Foundation
import TestSupport
import Testing

/// DICOM SEG files that other tools accept (issue #18): dciodvfy (dicom3tools) reports no error on them, and
/// highdicom indexes them by their source frames without overrides and gets the label map back.
struct SegmentationValidatorTests {
    static let enhancedCT = TestSupport.packageRoot
        .appendingPathComponent("Datasets/cache/dicom-corpus/pydicom-data/data_store/data/eCT_Supplemental.dcm").path

    /// dciodvfy's error lines for `path` (it reports "Error - …" and "Warning - …" lines on stderr).
    static func dciodvfyErrors(_ path: String) throws -> [String] {
        let tool = "/usr/bin/dciodvfy"
        try #require(FileManager.default.isExecutableFile(atPath: tool), "`make setup` installs dicom3tools")
        let result = try TestSupport.run(tool, [path], timeout: 120)
        return (result.standardOutput + "\n" + result.standardError).split(separator: "\n")
            .filter { $0.hasPrefix("Error") }.map(String.init)
    }

    /// The number of pixels where highdicom's label map (segments combined, one plane per `series` slice, read by
    /// source instance and frame) differs from `labels`; highdicom's version goes to the test log.
    static func highdicomDisagreements(seg: String, series: Series, labels: [Int32], folder: URL) throws -> Int {
        let expected = folder.appendingPathComponent("expected.u8")
        try Data(labels.map { UInt8($0) }).write(to: expected)
        let sources = series.slices.map { slice -> String in
            let uid = slice.file.dataset.string(.sopInstanceUID) ?? ""
            return slice.file.frameCount > 1 ? "\(uid):\(slice.frame + 1)" : uid
        }
        let output = try TestSupport.runPython(
            """
            import sys, highdicom, numpy as np
            seg = highdicom.seg.segread(sys.argv[1])
            expected = np.fromfile(sys.argv[2], np.uint8)
            planes = []
            for source in sys.argv[3:]:
                uid, _, frame = source.partition(":")
                if frame:
                    planes.append(seg.get_pixels_by_source_frame(uid, [int(frame)], combine_segments=True)[0])
                else:
                    planes.append(seg.get_pixels_by_source_instance([uid], combine_segments=True)[0])
            got = np.stack(planes).astype(np.uint8).ravel()
            print(highdicom.__version__, int((got != expected).sum()) if got.size == expected.size else -1)
            """, arguments: [seg, expected.path] + sources)
        let fields = output.split(separator: " ")
        print("highdicom \(fields.first ?? "?") read \(seg)")
        return Int(fields.last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? -2
    }

    @Test func segOverASingleFrameSeriesPassesDciodvfyAndReadsInHighdicom() throws {
        let folder = try TestSupport.temporaryFolder("seg-validators")
        let seriesFolder = folder.appendingPathComponent("ct")
        try FileManager.default.createDirectory(at: seriesFolder, withIntermediateDirectories: true)
        for k in 0..<4 {  // written in shuffled order: the SEG follows the series' order along the normal
            try TestDICOMWriter.ctSlice(
                stored: Array(repeating: 0, count: 20), position: [0, 0, Double(3 - k) * 2.5],
                series: "1.2.3.17", instance: k + 1
            )
            .write(to: seriesFolder.appendingPathComponent("\(k).dcm"))
        }
        let series = try #require(try Series.scan(seriesFolder.path).series.first)
        var labels = [Int32](repeating: 0, count: 4 * 20)
        // Every slice holds a label: a SEG has no frame for an empty slice, and highdicom refuses to index one.
        for pixel in 0..<7 {
            labels[pixel] = 1
            labels[40 + pixel] = 2
        }
        labels[25] = 1
        labels[79] = 3
        let path = folder.appendingPathComponent("labels.seg.dcm").path
        try Segmentation.write(
            labels: labels, series: series, segmentLabels: [1: "Liver", 2: "Lesion", 3: "Cyst"],
            segmentCount: 3, to: path)
        #expect(try Self.dciodvfyErrors(path) == [])
        #expect(try Self.highdicomDisagreements(seg: path, series: series, labels: labels, folder: folder) == 0)
        let creator = try DICOMFile(path: path).dataset.string(DICOMTag(0x0070, 0x0084))
        #expect(creator?.contains("^") == true, "Content Creator's Name in the PN form")
    }

    @Test func segOverAnEnhancedMultiFrameCTReferencesEachFrame() throws {
        let folder = try TestSupport.temporaryFolder("seg-validators-enhanced")
        let series = try #require(try Series.scan(Self.enhancedCT).series.first)
        let first = series.first
        let plane = first.rows * first.columns
        #expect(first.frameCount == 2)
        var labels = [Int32](repeating: 0, count: series.slices.count * plane)
        for row in 100..<200 { for column in 100..<300 { labels[row * first.columns + column] = 1 } }
        for row in 250..<300 { for column in 200..<260 { labels[plane + row * first.columns + column] = 2 } }
        let path = folder.appendingPathComponent("enhanced.seg.dcm").path
        try Segmentation.write(labels: labels, series: series, segmentCount: 2, to: path)
        #expect(try Self.dciodvfyErrors(path) == [])
        #expect(try Self.highdicomDisagreements(seg: path, series: series, labels: labels, folder: folder) == 0)
        #expect(try Segmentation(path: path).labels(alignedTo: series) == labels)
    }

    @Test func sourceWithoutFrameOfReferenceIsNamedAndNothingIsWritten() throws {
        let folder = try TestSupport.temporaryFolder("seg-no-frame-of-reference")
        var slice = TestDICOMWriter.ctSlice(
            stored: Array(repeating: 0, count: 20), position: [0, 0, 0],
            series: "1.2.3.18")
        slice.remove(.frameOfReferenceUID)
        let source = folder.appendingPathComponent("0.dcm")
        try slice.write(to: source)
        let series = try #require(try Series.scan(folder.path).series.first)
        let path = folder.appendingPathComponent("out.seg.dcm").path
        var labels = [Int32](repeating: 0, count: 20)
        labels[3] = 1
        #expect {
            try Segmentation.write(labels: labels, series: series, to: path)
        } throws: { error in
            let text = "\(error)"
            return text.contains("Frame of Reference UID (0020,0052)") && text.contains(source.path)
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
