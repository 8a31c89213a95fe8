import ImageFiles
import SliceLabSupport

/// NIfTI-1 and NIfTI-2 (`.nii`, `.nii.gz`): 2-D and 3-D images, a 4th axis as channels (as the Medical
/// Segmentation Decathlon stores modalities), label maps of integer values. Recognised by the header inside,
/// compressed or not.
public struct NIfTIFormat: ImageFormat {
    public var name: String { "NIfTI (.nii, .nii.gz)" }
    public var fileExtensions: [String] { ["nii.gz", "nii"] }

    public func recognizes(_ head: [UInt8]) -> Bool { NIfTIImage.recognizes(head) }

    public func readImage(_ path: String, limits: ReadLimits) throws -> ScanImage {
        try Self.scanImage(NIfTIImage.read(path, limits: limits))
    }

    /// The image as SliceLab's workflows take it: [z, y, x, c], the 4th axis as channels.
    public static func scanImage(_ image: NIfTIImage) throws -> ScanImage {
        let (slices, rows, columns, channels) = try extents(image)
        var values = image.values
        if channels > 1 {  // file order [c][z][y][x] to channels last, [z][y][x][c]
            let voxels = slices * rows * columns
            values = [Float](repeating: 0, count: image.values.count)
            for channel in 0..<channels {
                for voxel in 0..<voxels { values[voxel * channels + channel] = image.values[channel * voxels + voxel] }
            }
        }
        return ScanImage(
            frames: slices, rows: rows, columns: columns, channels: channels, values: values,
            spacing: image.geometry.spacing, source: image.path, hasSpacing: true)
    }

    /// A 2-D or 3-D file streams slice by slice (`NIfTIVoxelStream`: a slice is contiguous in the file); a 4-D
    /// file, whose channels of one slice lie a volume apart, is read whole.
    public func frames(_ path: String, limits: ReadLimits) throws -> FrameReader {
        let header = try NIfTIHeader.read(path, limits: limits)
        let (slices, rows, columns, channels) = try Self.extents(dimensions: header.dimensions, path: path)
        guard channels == 1 else {
            let image = try NIfTIImage.read(path, limits: limits)
            var reader = FrameReader.whole(try Self.scanImage(image))
            reader.geometry = image.geometry
            return reader
        }
        let stream = try NIfTIVoxelStream(header: header)
        let plane = rows * columns
        var reader = FrameReader(
            frames: slices, rows: rows, columns: columns, channels: 1,
            spacing: header.geometry.spacing, hasSpacing: true, source: path, modality: nil,
            skipped: []
        ) { try stream.read(first: $0 * plane, count: plane) }
        reader.geometry = header.geometry
        return reader
    }

    public func readLabels(_ path: String, limits: ReadLimits, options _: LabelReadingOptions) throws -> LoadedLabels {
        let image = try NIfTIImage.read(path, limits: limits)
        let (slices, rows, columns, channels) = try Self.extents(image)
        guard channels == 1 else {
            throw InputError.invalidContent(
                file: path,
                reason: "a label map has one value per voxel; this NIfTI "
                    + "file has \(channels) along its 4th axis")
        }
        var labels = [Int32](repeating: 0, count: image.values.count)
        for (index, value) in image.values.enumerated() {
            guard value >= 0, value <= 65535, value == value.rounded() else {
                throw InputError.invalidContent(
                    file: path,
                    reason: "label \(value) at voxel \(index) is not an "
                        + "integer in 0...65535")
            }
            labels[index] = Int32(value)
        }
        return LoadedLabels(
            labels: LabelMap(
                frames: slices, rows: rows, columns: columns, labels: labels,
                spacing: image.geometry.spacing),
            hasSpacing: true, geometry: image.geometry)
    }

    /// (slices, rows, columns, channels) of a 2-D, 3-D or 4-D image.
    static func extents(_ image: NIfTIImage) throws -> (Int, Int, Int, Int) {
        try extents(dimensions: image.dimensions, path: image.path)
    }

    static func extents(dimensions: [Int], path: String) throws -> (Int, Int, Int, Int) {
        let d = dimensions + [Int](repeating: 1, count: max(0, 4 - dimensions.count))
        guard d.dropFirst(4).allSatisfy({ $0 == 1 }) else {
            throw InputError.invalidContent(
                file: path,
                reason: "\(dimensions.count)-D NIfTI images "
                    + "are not read (2-D, 3-D, or 4-D with channels on the 4th axis)")
        }
        return (d[2], d[1], d[0], d[3])
    }
}
