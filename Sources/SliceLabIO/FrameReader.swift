import DICOM
import Foundation
import ImageFiles
import SliceLabSupport

/// An input image read one frame at a time, so a long series never has to be in memory at once: a DICOM
/// series folder decodes one slice per frame, a multi-frame DICOM file one frame, an HDF5 `/image` one box of
/// its dataset; a PNG is one frame. Frames come as `ScanImage`s of one frame, exactly as `ImageLoader.load`
/// would give them.
public struct FrameReader {
    public let frames: Int
    public let rows: Int
    public let columns: Int
    public let channels: Int
    /// (slice, row, column) in mm; unknown spacings are 1.
    public let spacing: [Double]
    public let hasSpacing: Bool
    let source: String
    let modality: String?
    /// Files of a series left out because they could not be read or decoded, with their reasons.
    public let skipped: [(file: String, reason: String)]
    /// The file's VOI window (its first frame's), nil when it has none.
    var window: VOIWindow? = nil
    /// Where the voxels are (the geometry contract, `VolumeGeometry`), when the format says: NIfTI, HDF5 with
    /// `geometry_version` 2, DICOM series and files with Image Position and Orientation.
    public var geometry: VolumeGeometry? = nil
    let read: (Int) throws -> [Float]

    /// Frame `index` (0 ..< frames) as a one-frame image.
    public func frame(_ index: Int) throws -> ScanImage {
        ScanImage(
            frames: 1, rows: rows, columns: columns, channels: channels, values: try read(index),
            spacing: spacing, source: source, modality: modality, hasSpacing: hasSpacing, window: window)
    }

    /// Opens `path` in its format (`ImageFormats`), as `ImageLoader.load` does.
    ///
    /// - Parameters:
    ///   - limits: bounds each frame (and each file opened) before allocating.
    /// - Throws: `InputError`, `ImageFileError`, `DICOMError`, each naming the file.
    public static func open(_ path: String, limits: ReadLimits) throws -> FrameReader {
        try ImageFormats.format(of: path).frames(path, limits: limits)
    }

    /// A DICOM series folder or file.
    static func dicom(_ path: String, limits: ReadLimits) throws -> FrameReader {
        var isDirectory: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        return isDirectory.boolValue ? try series(path, limits: limits) : try dicomFile(path, limits: limits)
    }

    static func whole(_ image: ScanImage) -> FrameReader {
        FrameReader(
            frames: image.frames, rows: image.rows, columns: image.columns, channels: image.channels,
            spacing: image.spacing, hasSpacing: image.hasSpacing, source: image.source,
            modality: image.modality, skipped: [], window: image.window
        ) { Array(image.frame($0)) }
    }

    static func hdf5(_ path: String, limits: ReadLimits) throws -> FrameReader {
        let file = try HDF5File.open(path)
        let layout = try ImageLoader.hdf5Layout(file)
        let shape = try file.shape(of: "/image")
        try limits.check(
            [layout.rows, layout.columns, layout.channels], bytesPerValue: 4, file: path,
            what: "a frame of /image")
        var reader = FrameReader(
            frames: layout.frames, rows: layout.rows, columns: layout.columns,
            channels: layout.channels, spacing: layout.spacing, hasSpacing: layout.hasSpacing,
            source: path, modality: layout.modality, skipped: []
        ) { index in
            // The frame axis is the first one when the dataset has frames, else the whole dataset is one frame.
            let framed = layout.frames > 1 || shape.count == 4 || (shape.count == 3 && layout.channels == 1)
            let start = shape.indices.map { $0 == 0 && framed ? index : 0 }
            let count = shape.indices.map { $0 == 0 && framed ? 1 : shape[$0] }
            return try file.read("/image", as: Float.self, start: start, count: count).values
        }
        if file.hasAttribute("geometry_version", at: "/image") {
            reader.geometry = try StoredGeometry.read(from: file, dataset: "/image")
        }
        return reader
    }

    /// A DICOM file's frames (a multi-frame file's slice spacing from its geometry, else Slice Thickness).
    static func dicomFile(_ path: String, limits: ReadLimits) throws -> FrameReader {
        let file = try DICOMFile(path: path, limits: limits)
        guard file.hasPixelData else { throw DICOMError.noPixelData(file: path) }
        let pixel = file.pixelSpacing
        var sliceSpacing = file.sliceThickness() ?? 1
        if file.frameCount > 1, let spacing = try Series.scan(path, limits: limits).series.first?.sliceSpacing {
            sliceSpacing = spacing
        }
        let spacing = [sliceSpacing, pixel?.row ?? 1, pixel?.column ?? 1]
        var reader = FrameReader(
            frames: file.frameCount, rows: file.rows, columns: file.columns,
            channels: file.isColor ? 3 : 1, spacing: spacing, hasSpacing: pixel != nil,
            source: path, modality: file.dataset.string(.modality), skipped: [],
            window: file.isColor ? nil : file.window(frame: 0)
        ) { index in
            file.isColor ? try file.rgbFrame(index).samples.map { Float($0) } : try file.modalityFrame(index)
        }
        reader.geometry = Series.geometry(of: (0..<file.frameCount).map { (file, $0) }, sliceSpacing: sliceSpacing)
        return reader
    }

    /// The first series of a folder, slice by slice in sorted order; files that do not decode are left out first
    /// (each decoded once and dropped), as `Series.load(folder:)` leaves them out.
    private static func series(_ folder: String, limits: ReadLimits) throws -> FrameReader {
        let scan = try Series.scan(folder, limits: limits)
        var skipped = scan.skipped
        var chosen: Series?
        for series in scan.series where !series.first.isColor {
            let (remaining, failed) = series.droppingUndecodableFiles()
            skipped += failed
            if let remaining {
                chosen = remaining
                break
            }
        }
        guard let series = chosen else {
            throw DICOMError.noSeries(folder: folder, reasons: skipped.map { "\($0.file): \($0.reason)" })
        }
        let file = series.first
        let pixel = file.pixelSpacing(frame: series.slices[0].frame)
        let sliceSpacing = series.sliceSpacing ?? file.sliceThickness(frame: series.slices[0].frame) ?? 1
        let spacing = [sliceSpacing, pixel?.row ?? 1, pixel?.column ?? 1]
        var reader = FrameReader(
            frames: series.slices.count, rows: file.rows, columns: file.columns, channels: 1,
            spacing: spacing, hasSpacing: file.pixelSpacing != nil, source: folder,
            modality: file.dataset.string(.modality), skipped: skipped,
            window: file.window(frame: series.slices[0].frame)
        ) { index in
            let slice = series.slices[index]
            return try slice.file.modalityFrame(slice.frame)
        }
        reader.geometry = series.geometry
        return reader
    }
}
