import Foundation
import TestSupport
import Testing

/// NIfTI files through the command line: `info` prints the geometry contract, every reading command takes
/// them (recognised by content), and a bad file is one line naming it, exit 1.
@Suite struct NIfTICommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../ImageFilesTests/Fixtures/nifti").standardized

    @Test func infoPrintsTheGeometryAsSimpleITKGivesIt() throws {
        let path = Self.fixtures.appendingPathComponent("int16-sform-only.nii.gz").path
        let result = try TestSupport.slicelab(["info", path, "--json"])
        #expect(result.status == 0, "\(result.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(object["format"] as? String == "NIfTI-1" && object["dimensions"] as? [Int] == [7, 6, 5])
        let spacing = try #require(object["spacing"] as? [Double])
        let origin = try #require(object["origin"] as? [Double])
        #expect(zip(spacing, [3, 0.9, 0.8]).allSatisfy { abs($0 - $1) < 1e-6 })
        #expect(origin == [-10, 20, 30])  // RAS (10, −20, 30) in LPS
        #expect(object["direction"] as? [Double] == [-1, 0, 0, 0, -1, 0, 0, 0, 1])
    }

    @Test func clusterReadsAVolumeByItsContent() throws {
        let folder = try TestSupport.temporaryFolder()
        let input = folder.appendingPathComponent("scan").path  // no extension: found by content
        try FileManager.default.copyItem(
            atPath: Self.fixtures.appendingPathComponent("float32-qform-sform.nii.gz").path,
            toPath: input)
        let output = folder.appendingPathComponent("labels.h5").path
        let result = try TestSupport.slicelab(["cluster", input, "--method", "otsu", "--classes", "2", "--out", output])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(FileManager.default.fileExists(atPath: output))
    }

    @Test func aBadFileIsOneLineNamingItExitOne() throws {
        let folder = try TestSupport.temporaryFolder()
        var bytes = [UInt8](try Data(contentsOf: Self.fixtures.appendingPathComponent("int16-2d.nii")))
        bytes.removeLast(40)
        let path = folder.appendingPathComponent("cut.nii").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let result = try TestSupport.slicelab(["info", path])
        #expect(result.status == 1)
        let lines = result.standardError.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].contains(path) && lines[0].contains("the file holds"),
            "\(result.standardError)")
    }
}

extension NIfTICommandTests {
    /// `convert` writes the contract's `/image` (z, y, x[, c]) with `spacing` (z, y, x), `origin`,
    /// `direction` and `geometry_version` 2, read back with h5py against the committed goldens.
    @Test(arguments: ["float32-qform-sform.nii.gz", "float32-4d.nii.gz"])
    func convertWritesTheGeometryContract(name: String) throws {
        let output = try TestSupport.temporaryFolder().appendingPathComponent("out.h5").path
        let source = Self.fixtures.appendingPathComponent(name).path
        let result = try TestSupport.slicelab(["convert", source, output])
        #expect(result.status == 0, "\(result.standardError)")
        let check = try TestSupport.runPython(
            """
            import h5py, numpy as np, sys
            out, goldens, name = sys.argv[1], sys.argv[2], sys.argv[3]
            with h5py.File(out) as f, h5py.File(goldens) as g:
                image, golden = f['image'], g[name]
                array = golden['array'][()]
                if array.ndim == 4:
                    array = np.moveaxis(array, 0, -1)  # [c, z, y, x] to channels last
                assert image.shape == array.shape, (image.shape, array.shape)
                assert np.array_equal(image[()], array.astype(np.float32))
                for key in ('spacing', 'origin', 'direction'):
                    assert np.allclose(image.attrs[key], golden[key][()], atol=1e-4), key
                assert int(image.attrs['geometry_version'][0]) == 2
            print('ok')
            """, arguments: [output, Self.fixtures.appendingPathComponent("goldens.h5").path, name])
        #expect(check.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
    }
}

extension NIfTICommandTests {
    /// NIfTI → HDF5 → NIfTI keeps the voxels and the geometry, with the sform and qform both set (code 1), as
    /// nibabel reads them back; an HDF5 label map becomes a uint8 NIfTI label map.
    @Test func convertRoundTripsThroughHDF5AndWritesLabelMaps() throws {
        let folder = try TestSupport.temporaryFolder()
        let source = Self.fixtures.appendingPathComponent("uint8-qform-only-qfac.nii").path
        let h5 = folder.appendingPathComponent("image.h5").path
        let back = folder.appendingPathComponent("back.nii.gz").path
        #expect(try TestSupport.slicelab(["convert", source, h5]).status == 0)
        let written = try TestSupport.slicelab(["convert", h5, back])
        #expect(written.status == 0, "\(written.standardError)")
        let labels = folder.appendingPathComponent("labels.h5").path
        let labelsOut = folder.appendingPathComponent("labels.nii").path
        let check = try TestSupport.runPython(
            """
            import h5py, nibabel as nib, numpy as np, subprocess, sys
            source, back, labels, labels_out, slicelab = sys.argv[1:6]
            a, b = nib.load(source), nib.load(back)
            assert np.array_equal(np.asarray(a.dataobj, np.float32), np.asarray(b.dataobj)), 'voxels'
            assert np.allclose(a.affine, b.affine, atol=1e-4), (a.affine, b.affine)
            assert int(b.header['qform_code']) == 1 and int(b.header['sform_code']) == 1
            assert np.allclose(b.get_qform(), b.get_sform(), atol=1e-4)
            with h5py.File(labels, 'w') as f:
                d = f.create_dataset('labels', data=np.arange(24, dtype=np.uint8).reshape(2, 3, 4) % 3)
                d.attrs['spacing'] = [2.0, 0.5, 0.25]; d.attrs['geometry_version'] = [2]
                d.attrs['origin'] = [1.0, 2.0, 3.0]; d.attrs['direction'] = np.eye(3).ravel()
            subprocess.run([slicelab, 'convert', labels, labels_out], check=True, capture_output=True)
            c = nib.load(labels_out)
            assert c.get_data_dtype() == np.uint8 and c.shape == (4, 3, 2)
            assert np.array_equal(np.asarray(c.dataobj).transpose(2, 1, 0), np.arange(24).reshape(2, 3, 4) % 3)
            assert np.allclose(c.header.get_zooms(), (0.25, 0.5, 2.0))
            assert np.allclose(c.affine[:3, 3], (-1, -2, 3))  # LPS origin (1, 2, 3) in RAS
            print('ok')
            """, arguments: [source, back, labels, labelsOut, TestSupport.slicelabBinary])
        #expect(check.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
    }
}
