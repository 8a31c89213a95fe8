import Foundation
import TestSupport
import Testing

@testable import DICOM

/// Inputs that trapped the DICOM reader during the fuzzing campaign (issue #10), kept in Fixtures/fuzz/
/// (written by Datasets/fuzz/make_regressions.py): each now ends in a typed error naming the file.
struct FuzzRegressionTests {
    private func fixture(_ name: String) -> String {
        TestSupport.packageRoot.appendingPathComponent("Tests/DICOMTests/Fixtures/fuzz/\(name)").path
    }

    /// A JPEG 2000 frame wrapped as JP2 whose 'jp2c' box has a broken 64-bit length: too short to hold it, 2⁶³−1
    /// (overflowing the box end) or negative as a signed integer (the box walk once trapped on each); and a
    /// codestream of nothing but its SOC marker (OpenJPEG read past its stream buffer on it); a main header with
    /// an unknown marker (FF C7), on which OpenJPEG 2.5.0 wrote past a buffer (SIGSEGV with two decoding threads);
    /// a 3 KB codestream declaring 256 × 720,896 for a 256 × 1024 image (2.6 s and 770 MB in OpenJPEG before).
    @Test(arguments: [
        "jp2-short-xl-box.dcm", "jp2-xl-length-overflow.dcm", "jp2-xl-length-negative.dcm",
        "j2k-soc-only.dcm", "j2k-unknown-marker-main-header.dcm",
        "j2k-declared-size-larger-than-image.dcm"
    ])
    func brokenJPEG2000FrameIsADecodeError(name: String) throws {
        let path = fixture(name)
        let file = try DICOMFile(path: path)
        #expect(TransferSyntax(uid: file.transferSyntaxUID).codec == .jpeg2000)
        do {
            _ = try file.modalityFrame(0)
            Issue.record("\(name) decoded, but its codestream is broken")
        } catch let error as DICOMError {
            guard case .decodeFailed(let errorFile, let frame, let reason) = error else {
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
    /// with a 4-byte length. The third (issue #23's 10-minute campaign) garbles a meta element's VR, so that DCMTK
    /// starts the data set elsewhere than the meta group length says: the walk now starts where DCMTK does.
    @Test(arguments: [
        "deflated-element-length-3.5GB.dcm", "deflated-nonstandard-vr-length.dcm",
        "deflated-meta-garbled-vr.dcm"
    ])
    func deflatedElementLongerThanTheDataSetIsRefusedBeforeParsing(name: String) throws {
        let path = fixture(name)
        do {
            _ = try DICOMFile(path: path)
            Issue.record("the file opened")
        } catch let error as DICOMError {
            #expect("\(error)".contains(path))
            #expect("\(error)".contains("but the deflated data set ends"))
        }
    }
}

/// The checks made before DCMTK decodes a frame (issue #23), on every RLE and JPEG file of the conformance
/// corpus: each still decodes untouched, and each breaks in the way that crashed or hung DCMTK gives a typed
/// error naming the file and the frame. The broken copies are made by pydicom (Tests/requirements.txt).
struct PreDecodeCheckTests {
    static let corpus = TestSupport.packageRoot.appendingPathComponent("Datasets/cache/dicom-corpus")

    /// Copies every corpus file of `syntaxes` into a temporary folder after `mutation` (Python, on `frame`, the
    /// first frame's bytes) and returns the originals' and the copies' paths.
    static func mutatedCopies(_ syntaxes: [String], _ mutation: String) throws -> (URL, [(String, String)]) {
        let folder = try TestSupport.temporaryFolder("predecode")
        let output = try TestSupport.runPython(
            """
            import pathlib, sys, warnings
            import pydicom
            from pydicom.encaps import encapsulate, generate_frames
            warnings.simplefilter("ignore")
            syntaxes, out = set(sys.argv[1].split(",")), pathlib.Path(sys.argv[2])
            for i, path in enumerate(sorted(pathlib.Path(sys.argv[3]).rglob("*"))):
                try:
                    ds = pydicom.dcmread(path)
                except Exception:
                    continue
                if str(ds.file_meta.get("TransferSyntaxUID", "")) not in syntaxes or "PixelData" not in ds:
                    continue
                frames = [bytearray(f) for f in generate_frames(ds.PixelData, number_of_frames=int(ds.get("NumberOfFrames", 1) or 1))]
                frame = frames[0]
                \(mutation.split(separator: "\n").joined(separator: "\n    "))
                frames[0] = frame
                ds.PixelData = encapsulate([bytes(f) for f in frames])
                target = out / f"{i:03d}.dcm"
                try:
                    ds.save_as(target)
                except Exception:  # a corpus file pydicom reads but cannot write back
                    continue
                print(f"{path}\\t{target}")
            """, arguments: [syntaxes.joined(separator: ","), folder.path, Self.corpus.path])
        let pairs = output.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
            .filter { $0.count == 2 }.map { ($0[0], $0[1]) }
        return (folder, pairs)
    }

    static func expectDecodeError(_ path: String, _ cause: String) {
        do {
            let file = try DICOMFile(path: path)
            _ = file.isColor ? try file.rgbFrame(0).samples.count : try file.modalityFrame(0).count
            Issue.record("\(path) decoded")
        } catch let error as DICOMError {
            guard case .decodeFailed(let errorFile, let frame, let reason) = error else {
                Issue.record("\(path): expected decodeFailed, got \(error)")
                return
            }
            #expect(errorFile == path && frame == 0 && reason.contains(cause), "\(error)")
        } catch {
            Issue.record("\(path): \(error)")
        }
    }

    @Test func everyRLEFileWithASegmentOffsetPastItsFrameIsRefused() throws {
        // The last segment's offset moved past the frame (the first segment's must stay 64, so with one segment
        // the count is raised to two, the second past the end).
        let (folder, pairs) = try Self.mutatedCopies(
            ["1.2.840.10008.1.2.5"],
            """
            import struct
            count = struct.unpack_from("<I", frame, 0)[0]
            if count == 1:
                struct.pack_into("<II", frame, 0, 2, 64)
                count = 2
            struct.pack_into("<I", frame, 4 * count, len(frame) + 1000)
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(pairs.count >= 10)
        for (original, broken) in pairs {
            let file = try DICOMFile(path: original)
            _ = file.isColor ? try file.rgbFrame(0).samples.count : try file.modalityFrame(0).count
            Self.expectDecodeError(broken, "malformed RLE header")
        }
    }

    @Test func everyJPEGFileWithATEMMarkerBeforeItsFrameHeaderIsRefused() throws {
        // FF 01 right after SOI: DCMTK's bit-depth pre-scan never moves past it.
        let (folder, pairs) = try Self.mutatedCopies(
            ["1.2.840.10008.1.2.4.50", "1.2.840.10008.1.2.4.51", "1.2.840.10008.1.2.4.57", "1.2.840.10008.1.2.4.70"],
            "frame[2:2] = b\"\\xff\\x01\"")
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(pairs.count >= 15)
        for (_, broken) in pairs { Self.expectDecodeError(broken, "FF 01 (TEM)") }
    }

    /// The pre-scan's walk, replayed: it stops at a frame header or a marker DCMTK refuses, loops only on TEM.
    @Test func dcmtkWalkReplayFindsTheLoopOnlyWhereDCMTKLoops() {
        let app0: [UInt8] = [0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00]
        #expect(DICOMFile.dcmtkBitDepthWalkLoops([0xFF, 0xD8, 0xFF, 0x01, 0, 0, 0]) == 2)
        #expect(DICOMFile.dcmtkBitDepthWalkLoops([0xFF, 0xD8, 0xFF, 0x01, 0, 0]) == nil)  // too short to enter
        #expect(DICOMFile.dcmtkBitDepthWalkLoops([0xFF, 0xD8] + app0 + [0xFF, 0xFF, 0xFF, 0x01, 0, 0, 0]) == 10)
        #expect(DICOMFile.dcmtkBitDepthWalkLoops([0xFF, 0xD8] + app0 + [0xFF, 0xC0, 0, 11, 8, 0, 1, 0, 1, 1]) == nil)
        #expect(DICOMFile.dcmtkBitDepthWalkLoops([0xFF, 0xD8, 0xFF, 0x02, 0xFF, 0x01, 0, 0]) == nil)  // refused
    }
}
