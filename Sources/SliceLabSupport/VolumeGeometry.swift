/// Where a volume's voxels are in the patient, as SimpleITK gives it (`GetSpacing`, `GetOrigin`,
/// `GetDirection`), in the array's axis order z, y, x (slice, row, column).
///
/// - `spacing`: millimetres between neighbouring voxels along slice, row and column (z, y, x).
/// - `origin`: the centre of voxel [0, 0, 0] in LPS millimetres (x, y, z).
/// - `direction`: a 3 × 3 matrix, row-major, whose columns are the LPS directions of increasing column, row
///   and slice index (ITK's direction matrix).
public struct VolumeGeometry: Sendable, Equatable, Codable {
    public var spacing: [Double]
    public var origin: [Double]
    public var direction: [Double]

    public init(spacing: [Double], origin: [Double], direction: [Double]) {
        (self.spacing, self.origin, self.direction) = (spacing, origin, direction)
    }

    /// Unit spacing at the origin, axes along L, P and S.
    public static let identity = VolumeGeometry(
        spacing: [1, 1, 1], origin: [0, 0, 0],
        direction: [1, 0, 0, 0, 1, 0, 0, 0, 1])
}
