import DICOM
import Foundation
import Testing
import TestSupport

/// Inputs that trapped the DICOM reader during the fuzzing campaign (issue #10), kept in Fixtures/fuzz/
/// (written by Datasets/fuzz/make_regressions.py): each now ends in a typed error naming the file.
struct FuzzRegressionTests {
    private func fixture(_ name: String) -> String {
        TestSupport.packageRoot.appendingPathComponent("Tests/DICOMTests/Fixtures/fuzz/\(name)").path
    }

    /// A JPEG 2000 frame wrapped as JP2 whose 'jp2c' box has a broken 64-bit length: too short to hold it, 2⁶³−1
    /// (overflowing the box end) or negative as a signed integer (the box walk once trapped on each); and a
    /// codestream of nothing but its SOC marker (OpenJPEG read past its stream buffer on it).
    @Test(arguments: ["jp2-short-xl-box.dcm", "jp2-xl-length-overflow.dcm", "jp2-xl-length-negative.dcm",
                      "j2k-soc-only.dcm"])
    func brokenJPEG2000FrameIsADecodeError(name: String) throws {
        let path = fixture(name)
        let file = try DicomFile(path: path)
        #expect(file.transferSyntaxUID == "1.2.840.10008.1.2.4.90")
        do {
            _ = try file.modalityFrame(0)
            Issue.record("\(name) decoded, but its codestream is broken")
        } catch let error as DICOMError {
            guard case let .decodeFailed(errorFile, frame, reason) = error else {
                Issue.record("expected decodeFailed, got \(error)")
                return
            }
            #expect(errorFile == path)
            #expect(frame == 0)
            #expect(reason.contains("JPEG 2000"))
        }
    }

    /// A deflated data set (image_dfl.dcm, fuzzed) whose elements claim more bytes than the data set holds, one
    /// of them 3.5 GB: DCMTK reserved that much before finding the stream short, because an inflating stream
    /// cannot be skipped. The header walk through the inflating stream refuses it first.
    /// The second file (found by the next campaign) hides its claim behind a non-standard VR, which DCMTK reads
    /// with a 4-byte length.
    @Test(arguments: ["deflated-element-length-3.5GB.dcm", "deflated-nonstandard-vr-length.dcm"])
    func deflatedElementLongerThanTheDataSetIsRefusedBeforeParsing(name: String) throws {
        let path = fixture(name)
        do {
            _ = try DicomFile(path: path)
            Issue.record("the file opened")
        } catch let error as DICOMError {
            #expect("\(error)".contains(path))
            #expect("\(error)".contains("but the deflated data set ends"))
        }
    }
}
