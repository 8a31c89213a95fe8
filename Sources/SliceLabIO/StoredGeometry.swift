import ImageFiles
import SliceLabSupport

/// The geometry SliceLab stores as attributes of an HDF5 image or label dataset.
public enum StoredGeometry {
    /// A dataset's geometry: version 2 as stored; older files hold `spacing` (row, column[, slice]) and
    /// `direction` transposed (rows along the axes), as `convert` wrote DICOM series before the contract.
    public static func read(from file: HDF5File, dataset: String) throws -> VolumeGeometry {
        func values(_ name: String) throws -> [Double]? {
            file.hasAttribute(name, at: dataset) ? try file.attribute(name, at: dataset).doubleValues : nil
        }
        var geometry = VolumeGeometry.identity
        let version = try values("geometry_version")?.first
        if let spacing = try values("spacing"), spacing.count >= 2 {
            geometry.spacing =
                version == 2
                ? Array(spacing.suffix(3))
                : [spacing.count == 3 ? spacing[2] : 1, spacing[0], spacing[1]]
            if geometry.spacing.count == 2 { geometry.spacing.insert(1, at: 0) }
        }
        if let origin = try values("origin"), origin.count == 3 { geometry.origin = origin }
        if let direction = try values("direction"), direction.count == 9 {
            geometry.direction = version == 2 ? direction : (0..<9).map { direction[($0 % 3) * 3 + $0 / 3] }
        }
        return geometry
    }
}
