import Foundation
import ImageFiles
import TestSupport
import Testing

@testable import SliceLabDatasets
@testable import SliceLabIO

/// One image-format registry, by content (issue #17 §1): a file's name does not decide how it is read, an
/// unrecognised file gets one line listing the formats, and labeled sets and `evaluate` find the same files.
struct ImageFormatTests {
    @Test func formatsAreFoundByContentWhateverTheName() throws {
        let folder = try TestSupport.temporaryFolder("formats")
        defer { try? FileManager.default.removeItem(at: folder) }
        let png = folder.appendingPathComponent("image.h5").path  // a PNG named as HDF5
        try PNGImage(rows: 2, columns: 3, channels: 1, samples: [UInt8]([0, 1, 2, 3, 4, 5])).write(to: png)
        #expect(try ImageLoader.load(png).values == [0, 1, 2, 3, 4, 5])
        let hdf5 = folder.appendingPathComponent("volume").path  // HDF5 without an extension
        try HDF5File.write(to: hdf5) { try $0.write([Float](repeating: 7, count: 6), shape: [2, 3], to: "/image") }
        #expect(try ImageLoader.load(hdf5).values == [Float](repeating: 7, count: 6))
        let dicom = TestSupport.packageRoot
            .appendingPathComponent("Sources/SliceLabKit/Resources/Demo/brain-lesion/images/axial025.dcm").path
        let copy = folder.appendingPathComponent("slice.png").path  // DICOM named as PNG
        try FileManager.default.copyItem(atPath: dicom, toPath: copy)
        #expect(try ImageLoader.load(copy).values == (try ImageLoader.load(dicom).values))
        #expect(ImageLoader.isDICOM(copy) && !ImageLoader.isDICOM(png))
    }

    @Test func anUnrecognisedFileIsOneLineListingTheFormats() throws {
        let folder = try TestSupport.temporaryFolder("formats-unknown")
        defer { try? FileManager.default.removeItem(at: folder) }
        let notes = folder.appendingPathComponent("notes.dcm").path
        try Data("these are notes, not an image\n".utf8).write(to: URL(fileURLWithPath: notes))
        let out = folder.appendingPathComponent("out.h5").path
        let result = try TestSupport.slicelab(["cluster", notes, "--method", "kmeans", "--classes", "2", "--out", out])
        #expect(result.status == 1)
        let lines = result.standardError.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].contains(notes)
                && lines[0].contains(
                    "not a format SliceLab reads (it reads DICOM RT Structure Set (labels, on its referenced series), "
                        + "DICOM (a file or a series folder; SEG for labels), PNG, HDF5 (/image or /labels), NIfTI "
                        + "(.nii, .nii.gz), NRRD (.nrrd, .nhdr; 3D Slicer's .seg.nrrd for labels))"),
            "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func caseNamesDropTheLongestFormatEnding() {
        #expect(ImageFormats.stem("case01.hdf5") == "case01")
        #expect(ImageFormats.stem("case.01.h5") == "case.01")
        #expect(ImageFormats.stem("IM0001") == "IM0001")
        #expect(ImageFormats.stem("scan.v2.raw") == "scan.v2")
    }

    /// `.hdf5` files and extension-less DICOM files were left out of labeled sets before the registry.
    @Test func labeledSetsFindHDF5AndExtensionlessFiles() throws {
        let folder = try LabeledSetTests.makeSet()
        defer { try? FileManager.default.removeItem(at: folder) }
        for sub in ["images", "labels"] {
            try FileManager.default.moveItem(
                at: folder.appendingPathComponent("\(sub)/b.h5"),
                to: folder.appendingPathComponent("\(sub)/b.hdf5"))
        }
        let set = try LabeledSet.open(folder.path)
        let sample = try set.load("b")
        #expect(sample.frameCount == 1)
    }
}
