import DICOM
import DICOMTestSupport
import Foundation
import ImageFiles
import TestSupport
import Testing

/// `slicelab info` and `slicelab convert` end to end: the built binary, its files (read back with h5py and
/// ImageFiles's PNG reader), exit codes and error lines.
struct ConvertCommandTests {
    let folder: URL

    init() throws { folder = try TestSupport.temporaryFolder("dicom-cli") }

    private func writeSeries() throws -> URL {
        let series = folder.appendingPathComponent("series")
        try FileManager.default.createDirectory(at: series, withIntermediateDirectories: true)
        for k in 0..<3 {
            try TestDICOMWriter.ctSlice(
                stored: (0..<20).map { Int16(k * 100 + $0) }, position: [0, 0, Double(2 - k) * 3],
                slope: 1, intercept: -1024, instance: k + 1
            )
            .write(to: series.appendingPathComponent("\(k).dcm"))
        }
        return series
    }

    @Test func convertingAFolderWritesTheSortedVolumeWithItsContractAttributes() throws {
        let series = try writeSeries()
        let output = folder.appendingPathComponent("volume.h5").path
        let result = try TestSupport.slicelab(["convert", series.path, output])
        #expect(result.status == 0, "\(result.standardError)")
        let report = try TestSupport.runPython(
            """
            import h5py, json, sys
            with h5py.File(sys.argv[1]) as f:
                image = f["/image"]
                same = (f["/series/1.2.3.4.5/image"][...] == image[...]).all()
                print(json.dumps({"shape": list(image.shape), "dtype": str(image.dtype),
                    "first": [float(image[k, 0, 0]) for k in range(image.shape[0])],
                    "spacing": [float(v) for v in image.attrs["spacing"]],
                    "modality": image.attrs["modality"], "slope": float(image.attrs["rescale_slope"]),
                    "intercept": float(image.attrs["rescale_intercept"]),
                    "photometric": image.attrs["photometric_interpretation"],
                    "syntax": image.attrs["transfer_syntax_uid"], "same": bool(same)}))
            """, arguments: [output])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])
        #expect(json["shape"] as? [Int] == [3, 4, 5])
        #expect(json["dtype"] as? String == "float32")
        // Sorted by z: slice k=2 (z 0), k=1 (z 3), k=0 (z 6).
        #expect(json["first"] as? [Double] == [200 - 1024, 100 - 1024, -1024])
        #expect(json["spacing"] as? [Double] == [3, 0.7, 0.8])  // z, y, x (geometry_version 2)
        #expect(json["modality"] as? String == "CT")
        #expect(json["slope"] as? Double == 1 && json["intercept"] as? Double == -1024)
        #expect(json["photometric"] as? String == "MONOCHROME2")
        #expect(json["syntax"] as? String == "1.2.840.10008.1.2.1")
        #expect(json["same"] as? Bool == true)
    }

    @Test func convertingToPNGAppliesTheRequestedWindow() throws {
        let series = try writeSeries()
        let output = folder.appendingPathComponent("slice.png").path
        // Slice 0 (z 0) holds −824 … −805 HU; a window 0,2000 maps it to ((x + 0.5) / 1999 + 0.5) × 255.
        let result = try TestSupport.slicelab(["convert", series.path, output, "--window", "0,2000", "--bits", "8"])
        #expect(result.status == 0, "\(result.standardError)")
        let values = try PNGImage.read(output).intSamples
        let expected = (0..<20).map { index -> Int in
            let x = Double(200 + index - 1024)
            return Int((((x + 0.5) / 1999 + 0.5) * 255).rounded())
        }
        #expect(values == expected)
    }

    @Test func infoPrintsJSONPerSeries() throws {
        let series = try writeSeries()
        let result = try TestSupport.slicelab(["info", series.path, "--json"])
        #expect(result.status == 0)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let first = try #require((json["series"] as? [[String: Any]])?.first)
        #expect(first["frames"] as? Int == 3)
        #expect(first["modality"] as? String == "CT")
        #expect(first["spacing"] as? [Double] == [3, 0.7, 0.8])  // z, y, x
        #expect(first["direction"] as? [Double] == [1, 0, 0, 0, 1, 0, 0, 0, 1])
    }

    @Test func badInputExitsWithOneAndNamesTheFile() throws {
        let path = folder.appendingPathComponent("junk.dcm").path
        try "junk".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try TestSupport.slicelab(["convert", path, folder.appendingPathComponent("out.h5").path])
        #expect(result.status == 1)
        #expect(result.standardError.contains("junk.dcm: cannot read DICOM: not a DICOM file"))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("out.h5").path))
        let usage = try TestSupport.slicelab(["convert", path, "out.png", "--window", "40"])
        #expect(usage.status == 2)
    }
}
