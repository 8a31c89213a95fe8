import DICOM
import DICOMTestSupport
import Foundation
import TestSupport
import Testing

/// DICOM SEG reading on pydicom-data's liver.dcm (binary, 3 frames of 512 × 512, segment 1 "Liver").
struct SegmentationTests {
    static let liver = TestSupport.packageRoot
        .appendingPathComponent("Datasets/cache/dicom-corpus/pydicom-data/data_store/data/liver.dcm").path

    @Test func binarySegmentationReadsSegmentsFramesAndReferences() throws {
        let seg = try Segmentation(path: Self.liver)
        #expect(seg.kind == .binary)
        #expect(seg.segments == [Segmentation.Segment(number: 1, label: "Liver")])
        #expect(seg.frames.count == 3)
        // pydicom 3.0.2: ds.pixel_array[k].sum() = 36233, 35645, 35220.
        #expect(seg.frames.map { $0.mask.filter { $0 }.count } == [36233, 35645, 35220])
        #expect(seg.frames.allSatisfy { $0.segmentNumber == 1 && $0.referencedSOPInstanceUID != nil })
        #expect(seg.frames[0].position == [-235.2, -226.8, -128.69])
        #expect(seg.pixelSpacing?.row == 0.810547)
    }

    @Test func labelVolumeIsSortedAlongTheNormal() throws {
        let seg = try Segmentation(path: Self.liver)
        let volume = seg.labelVolume()
        #expect(volume.slices == 3)
        // z −128.69, −127.69, −126.69 ascend in file order already.
        #expect(volume.positions.map { $0?[2] } == [-128.69, -127.69, -126.69])
        let plane = 512 * 512
        #expect(volume.labels[0..<plane].filter { $0 == 1 }.count == 36233)
        #expect(volume.labels[(2 * plane)...].filter { $0 == 1 }.count == 35220)
    }

    @Test func imageIsNotASegmentation() throws {
        let ct = TestSupport.packageRoot
            .appendingPathComponent("Datasets/cache/dicom-corpus/pydicom/pydicom/data/test_files/CT_small.dcm").path
        #expect(throws: DICOMError.self) { try Segmentation(path: ct) }
    }
}

/// Writing a label map as a binary SEG with DCMTK's dcmseg, then reading it back.
struct SegmentationWritingTests {
    @Test func labelMapRoundTripsThroughABinarySegReferencingTheSeries() throws {
        let folder = try TestSupport.temporaryFolder("dicom-seg")
        let seriesFolder = folder.appendingPathComponent("ct")
        try FileManager.default.createDirectory(at: seriesFolder, withIntermediateDirectories: true)
        for k in 0..<3 {
            try TestDICOMWriter.ctSlice(
                stored: Array(repeating: 0, count: 20), position: [0, 0, Double(k) * 2],
                series: "1.2.3.9", instance: k + 1
            )
            .write(to: seriesFolder.appendingPathComponent("\(k).dcm"))
        }
        let series = try #require(try Series.scan(seriesFolder.path).series.first)
        // Label 1 on slices 0 and 1, label 2 on slice 2; slice 1 also has label 2 at its last pixel.
        var labels = [Int32](repeating: 0, count: 3 * 20)
        for pixel in 0..<6 {
            labels[pixel] = 1
            labels[20 + pixel] = 1
        }
        for pixel in 10..<20 { labels[40 + pixel] = 2 }
        labels[39] = 2
        let path = folder.appendingPathComponent("labels.seg.dcm").path
        try Segmentation.write(labels: labels, series: series, segmentLabels: [1: "Liver", 2: "Lesion"], to: path)

        let seg = try Segmentation(path: path)
        #expect(seg.kind == .binary)
        #expect(
            seg.segments == [
                Segmentation.Segment(number: 1, label: "Liver"),
                Segmentation.Segment(number: 2, label: "Lesion")
            ])
        #expect(seg.frames.count == 4)
        #expect(seg.frames.allSatisfy { $0.referencedSOPInstanceUID?.hasPrefix("1.2.3.9.") == true })
        #expect(try seg.labels(alignedTo: series) == labels)
        let file = try DICOMFile(path: path)
        #expect(file.dataset.string(.patientName) == "Test^Patient")
        #expect(file.dataset.items(.referencedSeriesSequence).first?.string(.seriesInstanceUID) == "1.2.3.9")
    }

    @Test func emptyLabelMapIsRefused() throws {
        let folder = try TestSupport.temporaryFolder("dicom-seg-empty")
        try TestDICOMWriter.ctSlice(stored: Array(repeating: 0, count: 20), position: [0, 0, 0])
            .write(to: folder.appendingPathComponent("0.dcm"))
        let series = try #require(try Series.scan(folder.path).series.first)
        let path = folder.appendingPathComponent("empty.seg.dcm").path
        #expect(throws: DICOMError.self) {
            try Segmentation.write(labels: Array(repeating: 0, count: 20), series: series, to: path)
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
