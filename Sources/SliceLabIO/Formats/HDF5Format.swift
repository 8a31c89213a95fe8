import ImageFiles
import SliceLabSupport

/// HDF5: an image in `/image`, a label map in `/labels` (the layouts `slicelab convert` and `segment` write).
public struct HDF5Format: ImageFormat {
    public var name: String { "HDF5 (/image or /labels)" }
    public var fileExtensions: [String] { ["h5", "hdf5"] }

    /// The format signature at byte 0, or after a user block of 512, 1024 or 2048 bytes.
    public func recognizes(_ head: [UInt8]) -> Bool {
        let signature: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]
        return [0, 512, 1024, 2048].contains { offset in
            head.count >= offset + 8 && Array(head[offset..<(offset + 8)]) == signature
        }
    }

    public func readImage(_ path: String, limits: ReadLimits) throws -> ScanImage {
        try ImageLoader.loadHDF5(path, limits: limits)
    }

    public func frames(_ path: String, limits: ReadLimits) throws -> FrameReader {
        try FrameReader.hdf5(path, limits: limits)
    }

    public func readLabels(_ path: String, limits: ReadLimits, options _: LabelReadingOptions) throws -> LoadedLabels {
        try Self.loadHDF5(path, limits: limits)
    }

    static func loadHDF5(_ path: String, limits: ReadLimits) throws -> LoadedLabels {
        let file = try HDF5File.open(path)
        let shape = try file.shape(of: "/labels")
        guard (2...3).contains(shape.count), shape.allSatisfy({ $0 > 0 }) else {
            throw InputError.invalidContent(
                file: path,
                reason: "/labels has shape \(shape); expected [rows, columns] "
                    + "or [frames, rows, columns]")
        }
        switch try file.elementType(of: "/labels") {
        case .float32?, .float64?, nil:
            throw InputError.invalidContent(file: path, reason: "/labels must hold integers")
        default: break
        }
        let values = try file.read("/labels", as: Int64.self, limits: limits).values
        guard let low = values.min(), let high = values.max(), low >= 0, high <= 65_535 else {
            throw InputError.invalidContent(file: path, reason: "/labels holds values outside 0...65535")
        }
        let frames = shape.count == 3 ? shape[0] : 1
        var map = LabelMap(
            frames: frames, rows: shape[shape.count - 2], columns: shape[shape.count - 1],
            labels: values.map { Int32($0) })
        var hasSpacing = false
        if file.hasAttribute("spacing", at: "/labels"),
            let spacing = try file.attribute("spacing", at: "/labels").doubleValues
        {
            guard spacing.count == 3, spacing.allSatisfy({ $0 > 0 && $0.isFinite }) else {
                throw InputError.invalidContent(
                    file: path,
                    reason: "/labels spacing \(spacing) must be three positive "
                        + "values (slice, row, column) in mm")
            }
            map.spacing = spacing
            hasSpacing = true
        }
        return LoadedLabels(labels: map, hasSpacing: hasSpacing)
    }
}
