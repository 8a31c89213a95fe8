import DICOM
import ImageFiles
import SliceLabSupport

extension EvaluateInputs {
    /// Reads a DICOM SEG as a label map with its spacing (segment number = label), one slice per source frame
    /// sorted along the slice normal.
    static func loadDICOMSegmentation(_ path: String, limits: ReadLimits = .standard) throws -> LoadedLabels {
        let seg = try Segmentation(path: path, limits: limits)
        let volume = seg.labelVolume()
        var sliceSpacing = 1.0
        if let normal = seg.normal, volume.slices > 1, let first = volume.positions.first ?? nil,
            let second = volume.positions[1]
        {
            sliceSpacing = abs(zip(second, first).map { $0 - $1 }.enumerated().map { $1 * normal[$0] }.reduce(0, +))
        }
        let labels = LabelMap(
            frames: volume.slices, rows: seg.rows, columns: seg.columns, labels: volume.labels,
            spacing: [
                sliceSpacing > 0 ? sliceSpacing : 1, seg.pixelSpacing?.row ?? 1,
                seg.pixelSpacing?.column ?? 1
            ])
        return LoadedLabels(labels: labels, hasSpacing: seg.pixelSpacing != nil)
    }
}
