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
        for (field, values) in [("spacing", geometry.spacing), ("origin", geometry.origin),
                                ("direction", geometry.direction)] {
            let reference = try goldens.read("\(name)/\(field)", as: Double.self).values
            #expect(values.count == reference.count && zip(values, reference).allSatisfy { abs($0 - $1) <= 1e-4 },
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
        let stored = VolumeGeometry(spacing: try #require(try file.attribute("spacing", at: dataset).doubleValues),
                                    origin: try #require(try file.attribute("origin", at: dataset).doubleValues),
                                    direction: try #require(try file.attribute("direction", at: dataset).doubleValues))
        try Self.expectGeometry(stored, of: name, "HDF5")
        try Self.expectGeometry(try NIfTIImage.read(nifti).geometry, of: name, "NIfTI")
    }
}
