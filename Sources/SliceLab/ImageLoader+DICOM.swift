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
            let volume = volumes[0]
            let first = try DicomFile(path: volume.sourceFiles[0], limits: limits)
            return ScanImage(frames: volume.slices, rows: volume.rows, columns: volume.columns, channels: 1,
                             values: volume.values,
                             spacing: [volume.spacing.slice, volume.spacing.row, volume.spacing.column],
                             source: path, modality: first.dataset.string(.modality),
                             hasSpacing: first.pixelSpacing != nil)
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
}
