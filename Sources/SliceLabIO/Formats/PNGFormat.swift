import ImageFiles
import SliceLabSupport

/// PNG: one image, gray or colour (8 or 16 bits); a label map is one gray channel.
struct PNGFormat: ImageFormat {
    var name: String { "PNG" }
    var fileExtensions: [String] { ["png"] }

    func recognizes(_ head: [UInt8]) -> Bool {
        head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
    }

    func readImage(_ path: String, limits: ReadLimits) throws -> ScanImage {
        try ImageLoader.loadPNG(path, limits: limits)
    }

    func frames(_ path: String, limits: ReadLimits) throws -> FrameReader {
        FrameReader.whole(try readImage(path, limits: limits))
    }

    func readLabels(_ path: String, limits: ReadLimits, options _: LabelReadingOptions) throws -> LoadedLabels {
        try Self.loadPNG(path, limits: limits)
    }

    static func loadPNG(_ path: String, limits: ReadLimits) throws -> LoadedLabels {
        let png = try PNGImage.read(path, limits: limits)
        guard png.channels == 1 else {
            throw InputError.invalidContent(
                file: path, reason: "a label PNG must be one gray channel, this one has \(png.channels)")
        }
        let labels = png.intSamples.map { Int32($0) }
        return LoadedLabels(
            labels: LabelMap(frames: 1, rows: png.rows, columns: png.columns, labels: labels),
            hasSpacing: false)
    }
}
