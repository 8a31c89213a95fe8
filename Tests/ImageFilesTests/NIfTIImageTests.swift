import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

/// The NIfTI reader against SimpleITK (NIfTI-1) and nibabel (NIfTI-2, 4-D), from the committed goldens of
/// Datasets/goldens/nifti_goldens.py: arrays exactly for integers, within float32 rounding after scaling;
/// spacing, origin and direction within 1e-4 (the geometry contract).
@Suite struct NIfTIImageTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures/nifti")
    static let cases = [
        "int16-sform-only.nii.gz", "uint8-qform-only-qfac.nii", "float32-qform-sform.nii.gz",
        "int16-scaled.nii.gz", "int8.nii", "uint16.nii", "int32.nii", "uint32.nii", "int64.nii",
        "float64.nii", "int16-2d.nii", "nifti2-int16.nii.gz", "float32-4d.nii.gz",
        "int16-big-endian-scaled.nii.gz", "float64-big-endian.nii"
    ]

    @Test(arguments: cases)
    func arrayAndGeometryAgreeWithThePeer(name: String) throws {
        let goldens = try HDF5File.open(Self.folder.appendingPathComponent("goldens.h5").path)
        let expected = try goldens.read("\(name)/array", as: Double.self).values
        let image = try NIfTIImage.read(Self.folder.appendingPathComponent(name).path)
        #expect(image.values.count == expected.count)
        let integral = !name.hasPrefix("float") && !name.contains("scaled")
        for (value, reference) in zip(image.values, expected) {
            // Integers exactly; scaled and float values within float32 rounding of the peer's float64.
            let tolerance = integral ? 0 : Double(Float(reference).ulp) + abs(reference) * 1e-7
            if abs(Double(value) - reference) > tolerance {
                Issue.record("\(name): \(value) against \(reference)")
                break
            }
        }
        for (field, values) in [
            ("spacing", image.geometry.spacing), ("origin", image.geometry.origin),
            ("direction", image.geometry.direction)
        ] {
            let reference = try goldens.read("\(name)/\(field)", as: Double.self).values
            #expect(
                zip(values, reference).allSatisfy { abs($0 - $1) <= 1e-4 } && values.count == reference.count,
                "\(name) \(field): \(values) against \(reference)")
        }
    }

    @Test func filesAreRecognisedByTheHeaderInsideCompressedOrNot() throws {
        for name in Self.cases {
            let head = [UInt8](try Data(contentsOf: Self.folder.appendingPathComponent(name)).prefix(2056))
            #expect(NIfTIImage.recognizes(head), "\(name)")
        }
        #expect(!NIfTIImage.recognizes([0x89, 0x50, 0x4E, 0x47]) && !NIfTIImage.recognizes([0x1f, 0x8b, 0, 0]))
    }

    // MARK: - Bad files: one error naming the file and the cause, nothing read

    /// A copy of an uncompressed fixture with `edit` applied to its bytes.
    static func corrupted(_ name: String, _ edit: (inout [UInt8]) -> Void) throws -> String {
        var bytes = [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
        edit(&bytes)
        let path = try TestSupport.temporaryFolder().appendingPathComponent("bad.nii").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func put<T>(_ value: T, at offset: Int, in bytes: inout [UInt8]) {
        withUnsafeBytes(of: value) { for (i, byte) in $0.enumerated() { bytes[offset + i] = byte } }
    }

    @Test(arguments: [
        ("sizeof_hdr", "sizeof_hdr is neither 348"),
        ("zero dimension", "dim[2] is 0"),
        ("negative dimension", "dim[1] is -4"),
        ("dimension count", "dim[0] is 9"),
        ("unknown datatype", "datatype 1536 is not one SliceLab reads"),
        ("vox_offset past the end", "the file holds"),
        ("truncated", "the file holds")
    ])
    func badHeadersAreRefusedNamingTheCause(edit: String, cause: String) throws {
        let path = try Self.corrupted("int16-2d.nii") { bytes in
            switch edit {
            case "sizeof_hdr": Self.put(Int32(349), at: 0, in: &bytes)
            case "zero dimension": Self.put(Int16(0), at: 44, in: &bytes)
            case "negative dimension": Self.put(Int16(-4), at: 42, in: &bytes)
            case "dimension count": Self.put(Int16(9), at: 40, in: &bytes)
            case "unknown datatype": Self.put(Int16(1536), at: 70, in: &bytes)
            case "vox_offset past the end": Self.put(Float(100_000), at: 108, in: &bytes)
            default: bytes.removeLast(20)
            }
        }
        #expect {
            try NIfTIImage.read(path)
        } throws: { error in
            guard case ImageFileError.unreadable(let file, let reason) = error else { return false }
            return file == path && reason.contains(cause)
        }
    }

    @Test func dimensionsOverTheReadLimitAreRefusedBeforeAllocating() throws {
        let path = try Self.corrupted("int16-2d.nii") { bytes in
            Self.put(Int16(3), at: 40, in: &bytes)
            for axis in 1...3 { Self.put(Int16(32000), at: 40 + 2 * axis, in: &bytes) }
        }
        #expect {
            try NIfTIImage.read(path, limits: ReadLimits(maxBytes: 1 << 30, remedy: "raise it"))
        } throws: { error in
            guard case ImageFileError.tooLarge(let file, let reason) = error else { return false }
            return file == path && reason.contains("over the read limit") && reason.hasSuffix("(raise it)")
        }
    }

    /// The streaming reader gives `read`'s values run by run, for every golden file (compressed or not, scaled,
    /// big-endian, 2-D to 4-D): slices forward, then one backward (the stream restarts), then one forward again.
    @Test(arguments: cases)
    func streamedRunsEqualTheWholeRead(name: String) throws {
        let path = Self.folder.appendingPathComponent(name).path
        let whole = try NIfTIImage.read(path).values
        let stream = try NIfTIVoxelStream(path)
        let run = max(1, stream.header.dimensions.prefix(2).reduce(1, *))
        var streamed: [Float] = []
        while streamed.count < whole.count {
            streamed += try stream.read(first: streamed.count, count: min(run, whole.count - streamed.count))
        }
        #expect(streamed.elementsEqual(whole) { $0 == $1 || ($0.isNaN && $1.isNaN) }, "\(name)")
        let again = try stream.read(first: 0, count: min(run, whole.count))
        #expect(again.elementsEqual(whole.prefix(run)) { $0 == $1 || ($0.isNaN && $1.isNaN) })
        #expect(throws: ImageFileError.self) { try stream.read(first: whole.count - 1, count: 2) }
    }

    /// A truncated `.nii.gz` streams up to the cut and then fails naming the file, as the whole read does.
    @Test func aTruncatedStreamFailsNamingTheFile() throws {
        let bytes = [UInt8](try Data(contentsOf: Self.folder.appendingPathComponent("int16-sform-only.nii.gz")))
        let path = try TestSupport.temporaryFolder().appendingPathComponent("cut-stream.nii.gz").path
        try Data(bytes.prefix(bytes.count * 2 / 3)).write(to: URL(fileURLWithPath: path))
        let stream = try NIfTIVoxelStream(path)
        let count = stream.header.dimensions.reduce(1, *)
        #expect {
            try stream.read(first: 0, count: count)
        } throws: { error in
            guard case ImageFileError.unreadable(let file, let reason) = error else { return false }
            return file == path && reason.contains("truncated")
        }
    }

    @Test func aTruncatedGzipStreamIsAnErrorNamingTheFile() throws {
        let bytes = [UInt8](try Data(contentsOf: Self.folder.appendingPathComponent("int16-sform-only.nii.gz")))
        let path = try TestSupport.temporaryFolder().appendingPathComponent("cut.nii.gz").path
        try Data(bytes.prefix(bytes.count * 2 / 3)).write(to: URL(fileURLWithPath: path))
        #expect {
            try NIfTIImage.read(path)
        } throws: { error in
            guard case ImageFileError.unreadable(let file, _) = error else { return false }
            return file == path
        }
    }

    /// Label maps held as uint8 or uint16 write the file that the same labels as `Int32`s write: uint8 (datatype 2)
    /// when every label is at most 255, else uint16 (512), the same values; a count that does not fill the
    /// dimensions is refused.
    @Test func narrowLabelMapsWriteWhatInt32LabelsWrite() throws {
        let folder = try TestSupport.temporaryFolder()
        let dimensions = [5, 4, 3]
        let geometry = VolumeGeometry(
            spacing: [2, 1, 0.5], origin: [1, 2, 3], direction: VolumeGeometry.identity.direction)
        for largest in [Int32(7), 300] {
            let labels = (0..<60).map { Int32($0 * 37 % 11) * largest / 10 }
            let written: [NIfTIImage.Voxels] =
                [.labels(labels), .uint16Labels(labels.map { UInt16($0) })]
                + (largest <= 255 ? [.uint8Labels(labels.map { UInt8($0) })] : [])
            for (index, voxels) in written.enumerated() {
                let path = folder.appendingPathComponent("labels-\(largest)-\(index).nii.gz").path
                try NIfTIImage.write(voxels, dimensions: dimensions, geometry: geometry, to: path)
                let image = try NIfTIImage.read(path)
                #expect(image.header.datatype == (largest <= 255 ? 2 : 512))
                #expect(image.values == labels.map(Float.init))
            }
        }
        #expect(throws: ImageFileError.self) {
            try NIfTIImage.write(
                .uint8Labels([1, 2]), dimensions: dimensions, geometry: geometry,
                to: folder.appendingPathComponent("short.nii").path)
        }
    }
}
