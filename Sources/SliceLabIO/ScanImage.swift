import DICOM

/// An image or a stack of slices as SliceLab's workflows consume it: Float32 values in physical units where
/// the source has them (modality values for DICOM), channels last.
///
/// Layout: `values[((frame * rows + row) * columns + column) * channels + channel]`; 1 channel (gray) or 3 (RGB).
public struct ScanImage: Sendable {
    public var frames: Int
    public var rows: Int
    public var columns: Int
    public var channels: Int
    public var values: [Float]
    /// Voxel spacing in millimetres: (slice, row, column). Unknown spacings are 1.
    public var spacing: [Double]
    /// Where the image came from (a path).
    public var source: String
    /// DICOM modality ("CT", "MR", …) or nil.
    public var modality: String?
    /// Whether `spacing` came from the file (false when defaulted).
    public var hasSpacing: Bool
    /// The file's VOI window (DICOM Window Center/Width of the first frame, PS3.3 C.11.2.1.2), nil when it has
    /// none or is not DICOM.
    public var window: VOIWindow?

    public init(
        frames: Int, rows: Int, columns: Int, channels: Int, values: [Float],
        spacing: [Double] = [1, 1, 1], source: String, modality: String? = nil, hasSpacing: Bool = false,
        window: VOIWindow? = nil
    ) {
        precondition(values.count == frames * rows * columns * channels, "ScanImage: value count mismatch")
        precondition(spacing.count == 3, "ScanImage: spacing is (slice, row, column)")
        (self.frames, self.rows, self.columns, self.channels) = (frames, rows, columns, channels)
        self.values = values
        self.spacing = spacing
        self.source = source
        self.modality = modality
        self.hasSpacing = hasSpacing
        self.window = window
    }

    /// Pixels per frame.
    public var pixelsPerFrame: Int { rows * columns }

    /// The values of one frame, channels last.
    public func frame(_ index: Int) -> ArraySlice<Float> {
        let size = pixelsPerFrame * channels
        return values[(index * size)..<((index + 1) * size)]
    }

    /// One frame as gray intensities: the channel itself, or the mean of R, G, B for color.
    public func intensity(frame index: Int) -> [Float] {
        let pixels = frame(index)
        if channels == 1 { return Array(pixels) }
        var gray = [Float](repeating: 0, count: pixelsPerFrame)
        var offset = pixels.startIndex
        for pixel in 0..<pixelsPerFrame {
            var sum: Float = 0
            for channel in 0..<channels { sum += pixels[offset + channel] }
            gray[pixel] = sum / Float(channels)
            offset += channels
        }
        return gray
    }
}
