import DICOM
import Foundation
import ImageIO

extension ImageLoader {
    /// Loads a DICOM file (all frames, in file order) or a series folder (the first series as one volume sorted
    /// along the slice normal) as modality values; colour files as RGB samples in 3 channels.
    ///
    /// - Throws: `DICOMError` naming the file and the cause.
    static func loadDICOM(_ path: String, limits: ReadLimits) throws -> ScanImage {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            let (volumes, _) = try Series.load(folder: path, limits: limits)
            return try scanImage(volumes[0], source: path)
        }
        let file = try DicomFile(path: path, limits: limits)
        guard file.hasPixelData else { throw DICOMError.noPixelData(file: path) }
        let pixel = file.pixelSpacing
        var sliceSpacing = file.sliceThickness() ?? 1
        if file.frameCount > 1, let spacing = try Series.scan(path, limits: limits).series.first?.sliceSpacing {
            sliceSpacing = spacing
        }
        var values: [Float] = []
        values.reserveCapacity(file.frameCount * file.rows * file.columns * (file.isColor ? 3 : 1))
        for frame in 0..<file.frameCount {
            if file.isColor {
                values += try file.rgbFrame(frame).samples.map { Float($0) }
            } else {
                values += try file.modalityFrame(frame)
            }
        }
        return ScanImage(frames: file.frameCount, rows: file.rows, columns: file.columns,
                         channels: file.isColor ? 3 : 1, values: values,
                         spacing: [sliceSpacing, pixel?.row ?? 1, pixel?.column ?? 1], source: path,
                         modality: file.dataset.string(.modality), hasSpacing: pixel != nil)
    }

    /// A series volume as a one-channel `ScanImage` (slices in the series' order).
    static func scanImage(_ volume: Volume, source: String) throws -> ScanImage {
        let first = try DicomFile(path: volume.sourceFiles[0])
        return ScanImage(frames: volume.slices, rows: volume.rows, columns: volume.columns, channels: 1,
                         values: volume.values,
                         spacing: [volume.spacing.slice, volume.spacing.row, volume.spacing.column],
                         source: source, modality: first.dataset.string(.modality),
                         hasSpacing: first.pixelSpacing != nil)
    }

    /// A DICOM input together with the series its frames come from, frame `k` of the image being slice `k` of the
    /// series (what a DICOM SEG written from the result must reference): a single-frame file, or the first
    /// series of a folder (every file must decode, so no slice is silently left out).
    ///
    /// - Throws: `InputError.unsupportedFile` for multi-frame sources (a SEG here references whole single-frame
    ///   instances), `DICOMError` naming the file and the cause.
    public static func loadDICOMSeries(_ path: String, limits: ReadLimits = .standard) throws
        -> (image: ScanImage, series: Series) {
        let series = try SegmentationExport.sourceSeries(path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return (try loadDICOM(path, limits: limits), series)
        }
        return (try scanImage(try series.load(), source: path), series)
    }

    /// Whether `load` reads `path` as DICOM: a folder, or a file not named .png, .h5 or .hdf5.
    public static func isDICOM(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return true }
        return !["png", "h5", "hdf5"].contains(URL(fileURLWithPath: path).pathExtension.lowercased())
    }
}
