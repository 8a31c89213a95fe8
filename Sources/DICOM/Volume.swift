/// A grayscale volume in physical units: Float32 modality values [slices, rows, columns], row-major, with its
/// geometry in the patient coordinate system (millimetres, LPS).
public struct Volume: Sendable {
    public let slices: Int
    public let rows: Int
    public let columns: Int
    /// Modality values, [slices, rows, columns].
    public var values: [Float]
    /// Spacing in millimetres: between slices, between rows (PixelSpacing[0]), between columns (PixelSpacing[1]).
    public let spacing: (slice: Double, row: Double, column: Double)
    /// Position of the first voxel's centre (ImagePositionPatient of the first slice), millimetres.
    public let origin: [Double]
    /// Direction cosines: row direction (along a row, increasing column), column direction, slice normal.
    public let direction: [[Double]]
    /// The series it came from.
    public let seriesInstanceUID: String
    /// Files in slice order (a multi-frame file appears once per frame).
    public let sourceFiles: [String]
    /// Geometry warnings: gaps, duplicates, tilt, non-uniform spacing.
    public let warnings: [String]

    public init(slices: Int, rows: Int, columns: Int, values: [Float],
                spacing: (slice: Double, row: Double, column: Double), origin: [Double], direction: [[Double]],
                seriesInstanceUID: String, sourceFiles: [String], warnings: [String]) {
        precondition(values.count == slices * rows * columns, "volume values do not match its shape")
        self.slices = slices
        self.rows = rows
        self.columns = columns
        self.values = values
        self.spacing = spacing
        self.origin = origin
        self.direction = direction
        self.seriesInstanceUID = seriesInstanceUID
        self.sourceFiles = sourceFiles
        self.warnings = warnings
    }

    /// Values of one slice, [rows, columns].
    public func slice(_ index: Int) -> ArraySlice<Float> {
        values[(index * rows * columns)..<((index + 1) * rows * columns)]
    }
}
