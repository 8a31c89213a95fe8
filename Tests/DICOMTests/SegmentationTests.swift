import DICOM
import Foundation
import Testing
import TestSupport

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
