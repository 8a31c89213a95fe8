import SliceLabSupport

/// A grayscale volume in physical units: Float32 modality values [slices, rows, columns], row-major, with its
/// geometry in the patient coordinate system (millimetres, LPS) as SimpleITK's ImageSeriesReader gives it.
public struct Volume: Sendable {
    public let slices: Int
    public let rows: Int
    public let columns: Int
    /// Modality values, [slices, rows, columns].
    public var values: [Float]
    /// Spacing (z, y, x), origin (the first slice's ImagePositionPatient) and direction (columns: the row
    /// direction, the column direction and the slice normal of ImageOrientationPatient), as ITK gives them: the
    /// slice spacing is the distance from the first slice's position to the last one's over the slice count − 1
    /// (so a tilted gantry's slices are that far apart along their stacking line, not along the normal), and the
    /// direction stays orthogonal (ITK's `ForceOrthogonalDirection`).
    public let geometry: VolumeGeometry
    /// The series it came from.
    public let seriesInstanceUID: String
    /// Files in slice order (a multi-frame file appears once per frame).
    public let sourceFiles: [String]
    /// Geometry warnings: gaps, duplicates, tilt, non-uniform spacing.
    public let warnings: [String]

    public init(
        slices: Int, rows: Int, columns: Int, values: [Float],
        geometry: VolumeGeometry, seriesInstanceUID: String, sourceFiles: [String], warnings: [String]
    ) {
        precondition(values.count == slices * rows * columns, "volume values do not match its shape")
        self.slices = slices
        self.rows = rows
        self.columns = columns
        self.values = values
        self.geometry = geometry
        self.seriesInstanceUID = seriesInstanceUID
        self.sourceFiles = sourceFiles
        self.warnings = warnings
    }

    /// Values of one slice, [rows, columns].
    public func slice(_ index: Int) -> ArraySlice<Float> {
        values[(index * rows * columns)..<((index + 1) * rows * columns)]
    }
}
