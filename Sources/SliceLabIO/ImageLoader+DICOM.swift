import DICOM
import Foundation
import ImageFiles
import SliceLabSupport

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
        // A file's frames in file order, read as `segment` streams them, gathered into one image.
        let reader = try FrameReader.dicomFile(path, limits: limits)
        var values: [Float] = []
        values.reserveCapacity(reader.frames * reader.rows * reader.columns * reader.channels)
        for frame in 0..<reader.frames { values += try reader.frame(frame).values }
        return ScanImage(
            frames: reader.frames, rows: reader.rows, columns: reader.columns, channels: reader.channels,
            values: values, spacing: reader.spacing, source: path, modality: reader.modality,
            hasSpacing: reader.hasSpacing, window: reader.window)
    }

    /// A series volume as a one-channel `ScanImage` (slices in the series' order).
    static func scanImage(_ volume: Volume, source: String) throws -> ScanImage {
        let first = try DICOMFile(path: volume.sourceFiles[0])
        return ScanImage(
            frames: volume.slices, rows: volume.rows, columns: volume.columns, channels: 1,
            values: volume.values,
            spacing: volume.geometry.spacing,
            source: source, modality: first.dataset.string(.modality),
            hasSpacing: first.pixelSpacing != nil, window: first.window())
    }

    /// A DICOM input together with the series its frames come from, frame `k` of the image being slice `k` of the
    /// series (what a DICOM SEG written from the result must reference): a single-frame file, or the first
    /// series of a folder (every file must decode, so no slice is silently left out).
    ///
    /// - Throws: `InputError.unsupportedFile` for multi-frame sources (a SEG here references whole single-frame
    ///   instances), `DICOMError` naming the file and the cause.
    public static func loadDICOMSeries(_ path: String, limits: ReadLimits = .standard) throws
        -> (image: ScanImage, series: Series)
    {
        let series = try SegmentationExport.sourceSeries(path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return (try loadDICOM(path, limits: limits), series)
        }
        return (try scanImage(try series.load(), source: path), series)
    }

    /// Whether `load` reads `path` as DICOM: a folder, or a file whose content is DICOM.
    public static func isDICOM(_ path: String) -> Bool {
        (try? ImageFormats.format(of: path)) is DICOMFormat
    }
}
