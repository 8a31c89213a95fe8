import Foundation
import ImageFiles
import TestSupport
import Testing

/// Small files that crashed, hung or cost gigabytes in the readers (issue #23, from `../shared/regressions/`,
/// kept in Regressions/): each gives one line naming the file and the cause, exit 1 and no output through every
/// command that reads its format, and a batch skips it and goes on. Every run is killed after `timeout` seconds,
/// so a hang fails the test on its status instead of stopping the suite.
struct ReaderRegressionTests {
    static let timeout = 120.0

    static func regression(_ name: String) -> String {
        TestSupport.packageRoot.appendingPathComponent("Tests/RobustnessTests/Regressions/\(name)").path
    }

    /// The DICOM files and the words their error must hold: RLE offsets past the fragment (a SIGSEGV inside
    /// DCMTK) and a JPEG marker sequence on which DCMTK's IJG decoder loops forever.
    static let dicomCases = [
        ("dicom-rle-segment-offset-segv.dcm", "malformed RLE header: segment 2 starts at byte 822083848"),
        ("dicom-jpeg-baseline-3x3-hang.dcm", "malformed JPEG")
    ]

    static func expectRefused(
        _ result: TestSupport.ProcessResult, _ file: String, _ cause: String,
        output: String, _ command: String
    ) {
        #expect(result.status == 1, "\(command): status \(result.status) (9: killed after \(timeout) s)")
        #expect(
            result.standardError.contains(file) && result.standardError.contains(cause),
            "\(command): \(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: output), "\(command) wrote \(output)")
    }

    /// `cluster` and `segment` each refuse `file` with one line naming it and `cause`, and write nothing.
    static func expectClusterAndSegmentRefuse(_ file: String, _ cause: String, in folder: URL) throws {
        var out = folder.appendingPathComponent("clusters.h5").path
        expectRefused(
            try TestSupport.slicelab(
                ["cluster", file, "--method", "kmeans", "--classes", "2", "--out", out],
                timeout: timeout), file, cause, output: out, "cluster")
        let model = try Fixtures.model(in: folder)
        out = folder.appendingPathComponent("labels.h5").path
        expectRefused(
            try TestSupport.slicelab(["segment", file, "--model", model, "--out", out], timeout: timeout),
            file, cause, output: out, "segment")
    }

    @Test(arguments: dicomCases)
    func convertAndSegmentRefuseTheDICOMFile(_ c: (name: String, cause: String)) throws {
        let folder = try TestSupport.temporaryFolder("regression-dicom")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent(c.name).path
        try FileManager.default.copyItem(atPath: Self.regression(c.name), toPath: file)
        for output in ["out.h5", "out.png"] {
            let out = folder.appendingPathComponent(output).path
            Self.expectRefused(
                try TestSupport.slicelab(["convert", file, out], timeout: Self.timeout), file, c.cause,
                output: out, "convert → \(output)")
        }
        let model = try Fixtures.model(in: folder)
        let out = folder.appendingPathComponent("labels.h5").path
        Self.expectRefused(
            try TestSupport.slicelab(
                ["segment", file, "--model", model, "--out", out],
                timeout: Self.timeout), file, c.cause, output: out, "segment")
    }

    /// One series of three good slices beside a bad file (a series of its own): `info`, `convert` and `segment`
    /// of the folder finish, `convert` lists the bad file with its cause, and the good series is kept whole. (One bad file per folder: the two share
    /// a series, and the second would be skipped for its size before its pixels are read.)
    @Test(arguments: dicomCases)
    func aFolderWithABadDICOMFileSkipsItAndKeepsTheGoodSeries(_ c: (name: String, cause: String)) throws {
        let folder = try TestSupport.temporaryFolder("regression-folder")
        defer { try? FileManager.default.removeItem(at: folder) }
        let series = folder.appendingPathComponent("series")
        try FileManager.default.createDirectory(at: series, withIntermediateDirectories: true)
        for index in 0..<3 {
            let stored = (0..<(16 * 16)).map { UInt16((index * 5 + $0 * 7) % 2048) }
            try Data(
                Fixtures.ctFile(rows: 16, columns: 16, stored: stored, position: Double(index), instance: index + 1)
            )
            .write(to: series.appendingPathComponent("IM\(index).dcm"))
        }
        let bad = series.appendingPathComponent(c.name).path
        try FileManager.default.copyItem(atPath: Self.regression(c.name), toPath: bad)
        let info = try TestSupport.slicelab(["info", series.path], timeout: Self.timeout)
        #expect(info.status == 0, "\(info.standardError)")

        let out = folder.appendingPathComponent("series.h5").path
        let convert = try TestSupport.slicelab(["convert", series.path, out], timeout: Self.timeout)
        #expect(convert.status == 0, "\(convert.standardError)")
        #expect(
            convert.standardOutput.contains("skipped \(bad): ") && convert.standardOutput.contains(c.cause),
            "\(convert.standardOutput)")
        #expect(convert.standardOutput.contains("converted 3 of 4 files into 1 series, 1 skipped"))
        #expect(try HDF5File.open(out).shape(of: "/image") == [3, 16, 16])

        let model = try Fixtures.model(in: folder)
        let labels = folder.appendingPathComponent("labels.h5").path
        let segment = try TestSupport.slicelab(
            ["segment", series.path, "--model", model, "--out", labels],
            timeout: Self.timeout)
        #expect(segment.status == 0, "\(segment.standardError)")  // segment takes the folder's first series
        #expect(try HDF5File.open(labels).shape(of: "/labels") == [3, 16, 16])
    }

    /// A labeled set whose test case's image is a bad DICOM file: `compare` names the case, the file and the cause.
    @Test(arguments: dicomCases)
    func aLabeledSetWithABadDICOMImageNamesItsFile(_ c: (name: String, cause: String)) throws {
        let folder = try TestSupport.temporaryFolder("regression-set")
        defer { try? FileManager.default.removeItem(at: folder) }
        let set = try Fixtures.labeledSet(in: folder)
        let image = set.appendingPathComponent("images/case04.dcm").path
        try FileManager.default.removeItem(at: set.appendingPathComponent("images/case04.png"))
        try FileManager.default.copyItem(atPath: Self.regression(c.name), toPath: image)
        let side = c.name.contains("rle") ? 100 : 3
        try PNGImage(rows: side, columns: side, channels: 1, samples: [UInt8](repeating: 0, count: side * side))
            .write(to: set.appendingPathComponent("labels/case04.png").path)
        let model = try Fixtures.model(in: folder)
        let out = folder.appendingPathComponent("results.h5").path
        let result = try TestSupport.slicelab(
            ["compare", set.path, "--model", model, "--out", out],
            timeout: Self.timeout)
        Self.expectRefused(result, image, c.cause, output: out, "compare")
        #expect(result.standardError.contains("case04"))
    }

    /// An HDF5 `/image` whose element type claims 4 GB per value, stored past the end of a 2 KB file: refused
    /// from its header, before HDF5 or SliceLab allocates anything for it, by every command that reads HDF5.
    @Test func theHDF5FileIsRefusedByClusterSegmentAndEvaluate() throws {
        let folder = try TestSupport.temporaryFolder("regression-hdf5")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("image.h5").path
        try FileManager.default.copyItem(atPath: Self.regression("hdf5-contiguous-extent-past-eof.h5"), toPath: file)
        let cause = "runs past the file's end"
        try Self.expectClusterAndSegmentRefuse(file, cause, in: folder)
        // evaluate reads /labels: the same flaw there, made by h5py and one patched layout message (the data's
        // address moved 256 MiB past the end of the file).
        let labels = folder.appendingPathComponent("labels-past-eof.h5").path
        try TestSupport.runPython(
            """
            import h5py, numpy as np, struct, sys
            with h5py.File(sys.argv[1], "w") as f:
                d = f.create_dataset("labels", data=np.ones((3, 4, 5), np.uint8))
                address = d.id.get_offset()
            data = bytearray(open(sys.argv[1], "rb").read())
            layout = struct.pack("<QQ", address, 60)
            assert data.count(layout) == 1
            at = data.index(layout)
            data[at:at + 8] = struct.pack("<Q", 256 << 20)
            open(sys.argv[1], "wb").write(bytes(data))
            """, arguments: [labels])
        let reference = folder.appendingPathComponent("reference.h5").path
        try HDF5File.write(to: reference, updating: false) {
            try $0.write([UInt8](repeating: 1, count: 60), shape: [3, 4, 5], to: "/labels")
        }
        let out = folder.appendingPathComponent("results.h5").path
        for (pred, ref) in [(labels, reference), (reference, labels)] {
            Self.expectRefused(
                try TestSupport.slicelab(
                    ["evaluate", "--pred", pred, "--ref", ref, "--out", out],
                    timeout: Self.timeout), labels, cause, output: out, "evaluate")
        }
    }

    /// A 100-byte gzip NIfTI file (found by fuzz-nifti) whose header claims a volume of gigabytes: refused from
    /// its header (deflate inflates at most 1032:1) before anything is allocated, by every command that reads it.
    @Test func theNIfTIFileIsRefusedByInfoClusterAndSegment() throws {
        let folder = try TestSupport.temporaryFolder("regression-nifti")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("image.nii.gz").path
        try FileManager.default.copyItem(atPath: Self.regression("nifti-gzip-claims-huge-volume.nii.gz"), toPath: file)
        let cause = "at most 1032 times that inflated"
        try Self.expectClusterAndSegmentRefuse(file, cause, in: folder)
        let info = try TestSupport.slicelab(["info", file], timeout: Self.timeout)
        #expect(info.status == 1 && info.standardError.contains(cause), "\(info.standardError)")
    }

    /// Two inputs from the review's fuzz runs: a DICOM file whose many elements took DCMTK over libFuzzer's
    /// 3 s under AddressSanitizer (about 1.7 s in a debug build: slow, not a hang), and an HDF5 file whose group's
    /// local heap claims 5 GB (libhdf5 tries to allocate it). Each finishes well within the time limit: the
    /// DICOM file is described, the HDF5 file is one line naming it, and nothing is written.
    @Test func fuzzFindingsOfTheReviewFinishWithinTheTimeLimit() throws {
        let folder = try TestSupport.temporaryFolder("regression-review")
        defer { try? FileManager.default.removeItem(at: folder) }
        let described = try TestSupport.slicelab(
            ["info", Self.regression("dicom-many-elements-slow-under-asan.dcm")],
            timeout: Self.timeout)
        #expect(described.status == 0, "\(described.standardError)")
        let file = folder.appendingPathComponent("image.h5").path
        try FileManager.default.copyItem(atPath: Self.regression("hdf5-local-heap-claims-5gb.h5"), toPath: file)
        let out = folder.appendingPathComponent("clusters.h5").path
        Self.expectRefused(
            try TestSupport.slicelab(
                [
                    "cluster", file, "--method", "otsu", "--classes", "2",
                    "--out", out
                ], timeout: Self.timeout),
            file, "no object '/image'", output: out, "cluster")
    }

    /// From the fuzz run of issue #33's review (`make fuzz FUZZ_TARGETS=hdf5`): a metadata block whose size field
    /// makes libhdf5's cache ask malloc for about 2^60 bytes (AddressSanitizer stops there; without it malloc
    /// fails and libhdf5 returns an error). `convert` (the image) and `evaluate` (the label reader of the HDF5
    /// format) each give one line naming the file, exit 1 and no output.
    @Test func hdf5MetadataBlockOfAHugeClaimedSizeIsRefused() throws {
        let folder = try TestSupport.temporaryFolder("regression-hdf5-block")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("case.h5").path
        try FileManager.default.copyItem(
            atPath: Self.regression("hdf5-metadata-block-claims-huge-size.h5"), toPath: file)
        var out = folder.appendingPathComponent("image.nii").path
        Self.expectRefused(
            try TestSupport.slicelab(["convert", file, out], timeout: Self.timeout), file, "no object '/image'",
            output: out, "convert")
        out = folder.appendingPathComponent("results.h5").path
        Self.expectRefused(
            try TestSupport.slicelab(
                ["evaluate", "--pred", file, "--ref", file, "--out", out], timeout: Self.timeout),
            file, "no object '/labels'", output: out, "evaluate")
    }
}
