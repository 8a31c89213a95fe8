import DICOM
import Foundation
import SliceLabIO
import TestSupport
import Testing

/// The DICOM branch of `ImageLoader` on pydicom's CT_small.dcm from the conformance corpus (`make corpus`).
struct ImageLoaderDICOMTests {
    static let corpus = TestSupport.packageRoot.appendingPathComponent("Datasets/cache/dicom-corpus")

    @Test func dicomFileLoadsAsModalityValuesWithSpacing() throws {
        let path = Self.corpus.appendingPathComponent("pydicom/pydicom/data/test_files/CT_small.dcm").path
        let image = try ImageLoader.load(path)
        #expect(image.frames == 1 && image.rows == 128 && image.columns == 128 && image.channels == 1)
        #expect(image.modality == "CT")
        #expect(image.hasSpacing && abs(image.spacing[1] - 0.661468) < 1e-6)
        // pydicom 3.0.2 apply_modality_lut on CT_small.dcm (RescaleSlope 1, RescaleIntercept −1024): the value at
        // row 0, column 0 is stored 175 → −849 (Tests/DICOMTests/Fixtures/dicom_goldens.json records the rest).
        #expect(image.values[0] == -849)
        #expect(image.window == nil)  // CT_small has no Window Center/Width
    }

    /// The file's VOI window travels with the image (the CRF's display intensities use it, issue #24): MR_small
    /// has Window Center 600, Width 1600 and no VOI LUT Function (so LINEAR).
    @Test func dicomWindowIsKeptWithTheImage() throws {
        let path = Self.corpus.appendingPathComponent("pydicom/pydicom/data/test_files/MR_small.dcm").path
        #expect(try ImageLoader.load(path).window == VOIWindow(center: 600, width: 1600))
    }

    @Test func colourDicomLoadsAsThreeChannels() throws {
        let path = Self.corpus.appendingPathComponent("pydicom-data/data_store/data/SC_rgb.dcm").path
        let image = try ImageLoader.load(path)
        #expect(image.channels == 3 && image.rows == 100 && image.columns == 100)
        #expect(Array(image.values.prefix(3)) == [255, 0, 0])
    }
}
