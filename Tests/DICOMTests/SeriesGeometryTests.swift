import DICOM
import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

/// DICOM series against SimpleITK's ImageSeriesReader (files ordered by `GetGDCMSeriesFileNames`), from the
/// committed goldens of Datasets/goldens/dicom_series_goldens.py: shuffled file order, a 20° gantry tilt, an oblique
/// MR with a fractional rescale. Arrays within float32 rounding of the peer's values, spacing (z, y, x), origin and
/// direction within 1e-4 (the geometry contract, issue #18); `convert` carries the same geometry into HDF5
/// (`geometry_version` 2) and NIfTI.
@Suite struct SeriesGeometryTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/series")
    static let cases = ["axial-shuffled", "gantry-tilt", "oblique-scaled"]

    static func expectGeometry(_ geometry: VolumeGeometry, of name: String, _ context: String) throws {
        let goldens = try HDF5File.open(folder.appendingPathComponent("goldens.h5").path)
        for (field, values) in [
            ("spacing", geometry.spacing), ("origin", geometry.origin),
            ("direction", geometry.direction)
        ] {
            let reference = try goldens.read("\(name)/\(field)", as: Double.self).values
            #expect(
                values.count == reference.count && zip(values, reference).allSatisfy { abs($0 - $1) <= 1e-4 },
                "\(name) \(context) \(field): \(values) against SimpleITK's \(reference)")
        }
    }

    @Test(arguments: cases)
    func volumeAgreesWithSimpleITK(name: String) throws {
        let goldens = try HDF5File.open(Self.folder.appendingPathComponent("goldens.h5").path)
        let expected = try goldens.read("\(name)/array", as: Double.self)
        let (volumes, skipped) = try Series.load(folder: Self.folder.appendingPathComponent(name).path)
        #expect(skipped.isEmpty)
        let volume = try #require(volumes.first)
        #expect([volume.slices, volume.rows, volume.columns] == expected.shape)
        let mismatches = zip(volume.values, expected.values).filter { value, reference in
            abs(Double(value) - reference) > Double(Float(reference).ulp)
        }
        #expect(mismatches.isEmpty, "\(name): \(mismatches.prefix(3))")
        try Self.expectGeometry(volume.geometry, of: name, "volume")
    }

    @Test(arguments: cases)
    func convertWritesTheSameGeometryToHDF5AndNIfTI(name: String) throws {
        let output = try TestSupport.temporaryFolder("series-geometry")
        let series = Self.folder.appendingPathComponent(name).path
        let h5 = output.appendingPathComponent("\(name).h5").path
        let nifti = output.appendingPathComponent("\(name).nii.gz").path
        for target in [h5, nifti] {
            let result = try TestSupport.slicelab(["convert", series, target], timeout: 120)
            #expect(result.status == 0, "\(result.standardError)")
        }
        let file = try HDF5File.open(h5)
        let dataset = "/image"
        #expect(try file.attribute("geometry_version", at: dataset).doubleValues == [2])
        let stored = VolumeGeometry(
            spacing: try #require(try file.attribute("spacing", at: dataset).doubleValues),
            origin: try #require(try file.attribute("origin", at: dataset).doubleValues),
            direction: try #require(try file.attribute("direction", at: dataset).doubleValues))
        try Self.expectGeometry(stored, of: name, "HDF5")
        try Self.expectGeometry(try NIfTIImage.read(nifti).geometry, of: name, "NIfTI")
    }

    /// A label map goes NIfTI → DICOM SEG → NIfTI over a series through `convert`, and comes back on the series' grid
    /// with its geometry; a SEG without `--reference` is refused with the reason.
    @Test func labelMapRoundTripsNIfTIToSegAndBack() throws {
        let output = try TestSupport.temporaryFolder("series-seg-nifti")
        let series = Self.folder.appendingPathComponent("gantry-tilt").path
        var labels = [Int32](repeating: 0, count: 6 * 5 * 4)
        for index in labels.indices where index % 3 == 0 { labels[index] = Int32(1 + index % 2) }
        let geometry = try #require(try Series.scan(series).series.first).geometry
        let nifti = output.appendingPathComponent("labels.nii.gz").path
        try NIfTIImage.write(.labels(labels), dimensions: [4, 5, 6], geometry: geometry, to: nifti)
        let seg = output.appendingPathComponent("labels.seg.dcm").path
        let back = output.appendingPathComponent("back.nii.gz").path
        for arguments in [[nifti, "--reference", series, seg], [seg, "--reference", series, back]] {
            let result = try TestSupport.slicelab(["convert"] + arguments, timeout: 120)
            #expect(result.status == 0, "\(result.standardError)")
        }
        let read = try NIfTIImage.read(back)
        #expect(read.values.map { Int32($0) } == labels)
        try Self.expectGeometry(read.geometry, of: "gantry-tilt", "SEG to NIfTI")
        let refused = try TestSupport.slicelab(["convert", seg, output.appendingPathComponent("x.nii.gz").path])
        #expect(refused.status == 1 && refused.standardError.contains("--reference"))
    }
}
