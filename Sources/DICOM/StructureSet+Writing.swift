import CDCMTK
import Foundation
import SliceLabSupport

extension StructureSet {
    /// One ROI to write: the label value whose voxels it outlines, and how viewers show it.
    public struct ROIDescription: Sendable {
        public var label: Int
        public var name: String
        public var color: (Int, Int, Int)
        /// `RTROIInterpretedType`: `ORGAN`, `GTV`, `PTV`, `CTV`, `AVOIDANCE`, `EXTERNAL`, …
        public var interpretedType: String

        public init(label: Int, name: String, color: (Int, Int, Int), interpretedType: String = "ORGAN") {
            (self.label, self.name, self.color, self.interpretedType) = (label, name, color, interpretedType)
        }
    }

    /// Writes `labels` ([slices, rows, columns] in the series' slice order) as an RT Structure Set on `series`:
    /// one ROI per description, its closed planar contours traced per slice (`ContourTracing`: marching squares
    /// on pixel centres, holes as contours of their own), each referencing its slice's image; patient, study and
    /// Frame of Reference (with its Position Reference Indicator) from the series; a new series numbered the
    /// source's + 1000; Operators' Name present (Type 2). The file appears only when complete.
    ///
    /// - Returns: the number of contours written per ROI label.
    /// - Throws: `DICOMError.invalidStructureSet` when the labels do not fit the series, `.unwritable` when DCMTK
    ///   refuses. Rests on `cdcmtk_rtw_create`, `cdcmtk_rtw_add_roi`, `cdcmtk_rtw_add_contour`, `cdcmtk_rtw_save`.
    @discardableResult
    public static func write(
        labels: [Int32], series: Series, rois: [ROIDescription], label: String = "SliceLab",
        seriesDescription: String = "SliceLab structure set", uids: (series: String, instance: String)? = nil,
        to path: String
    ) throws -> [Int: Int] {
        let grid = try ContourGrid(series: series)
        let plane = grid.rows * grid.columns
        guard labels.count == grid.slices * plane else {
            throw DICOMError.invalidStructureSet(
                file: path, roi: nil,
                reason: "\(labels.count) labels for \(grid.slices) slices of \(grid.rows)×\(grid.columns)")
        }
        let first = series.first
        var message = [CChar](repeating: 0, count: 512)
        guard
            let writer = cdcmtk_rtw_create(
                first.path, label, seriesDescription, Int32(clamping: (first.dataset.int(.seriesNumber) ?? 0) + 1000),
                &message, message.count)
        else {
            throw DICOMError.unwritable(file: path, reason: String(nulTerminated: message))
        }
        defer { cdcmtk_rtw_free(writer) }
        func check(_ status: Int32) throws {
            guard status == 0 else {
                throw DICOMError.unwritable(file: path, reason: String(cString: cdcmtk_rtw_error(writer)))
            }
        }
        if let uids { try check(cdcmtk_rtw_set_uids(writer, uids.series, uids.instance)) }
        let classes = series.slices.map { $0.file.dataset.string(.sopClassUID) ?? "" }
        for (index, sop) in grid.sopInstanceUIDs.enumerated() where !grid.sopInstanceUIDs[..<index].contains(sop) {
            try check(cdcmtk_rtw_add_image(writer, classes[index], sop))
        }
        var counts: [Int: Int] = [:]
        for (number, roi) in rois.enumerated() {
            let rgb: [Int32] = [roi.color.0, roi.color.1, roi.color.2].map { Int32(clamping: $0) }
            try check(cdcmtk_rtw_add_roi(writer, Int32(number + 1), roi.name, rgb, roi.interpretedType))
            for slice in 0..<grid.slices {
                let mask = labels[slice * plane..<(slice + 1) * plane].map { $0 == Int32(roi.label) ? UInt8(1) : 0 }
                guard mask.contains(1) else { continue }
                for contour in ContourTracing.contours(mask, rows: grid.rows, columns: grid.columns) {
                    let origin = grid.positions[slice]
                    let points = contour.flatMap { point in
                        (0..<3).map {
                            origin[$0] + point.x * grid.columnSpacing * grid.rowDirection[$0]
                                + point.y * grid.rowSpacing * grid.columnDirection[$0]
                        }
                    }
                    try check(
                        cdcmtk_rtw_add_contour(
                            writer, Int32(number + 1), points, contour.count, classes[slice],
                            grid.sopInstanceUIDs[slice]))
                    counts[roi.label, default: 0] += 1
                }
            }
        }
        try writeAtomically(to: path) { temporary in try check(cdcmtk_rtw_save(writer, temporary)) }
        return counts
    }
}
