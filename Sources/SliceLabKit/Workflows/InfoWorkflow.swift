import DICOM
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabSupport

/// `slicelab info`: what a DICOM file or folder holds, per series, without decoding pixels.
public enum InfoWorkflow {
    /// One series as `info` reports it (also its JSON schema).
    public struct SeriesSummary: Codable, Sendable {
        public var seriesInstanceUID: String
        public var patientName: String
        public var patientID: String
        public var studyDescription: String
        public var seriesDescription: String
        public var modality: String
        public var rows: Int
        public var columns: Int
        /// Slices of the series (frames of every file).
        public var frames: Int
        public var files: Int
        /// The geometry contract (ITK's): spacing z, y, x in millimetres; origin (the first slice's centre) and
        /// direction (row-major, columns along the x, y, z index) in LPS.
        public var spacing: [Double]
        public var origin: [Double]
        public var direction: [Double]
        public var transferSyntaxUID: String
        public var transferSyntax: String
        public var photometricInterpretation: String
        public var bitsStored: Int
        public var windowCenter: Double?
        public var windowWidth: Double?
        public var warnings: [String]
    }

    /// The report: series, and files that were skipped with their reasons.
    public struct Report: Codable, Sendable {
        public var path: String
        public var series: [SeriesSummary]
        public var skipped: [[String: String]]
    }

    /// Scans `path` (a file or a folder, recursively), opening every file with `limits`. Throws `DICOMError`
    /// when nothing loads.
    public static func report(_ path: String, limits: ReadLimits = .standard) throws -> Report {
        let scan = try Series.scan(path, limits: limits)
        let summaries = scan.series.map { series -> SeriesSummary in
            let file = series.first
            let geometry = series.geometry
            let window = file.window(frame: series.slices[0].frame)
            let data = file.dataset
            return SeriesSummary(
                seriesInstanceUID: series.seriesInstanceUID, patientName: data.string(.patientName) ?? "",
                patientID: data.string(.patientID) ?? "", studyDescription: data.string(.studyDescription) ?? "",
                seriesDescription: data.string(.seriesDescription) ?? "", modality: data.string(.modality) ?? "",
                rows: file.rows, columns: file.columns, frames: series.slices.count,
                files: Set(series.slices.map(\.file.path)).count, spacing: geometry.spacing,
                origin: geometry.origin, direction: geometry.direction,
                transferSyntaxUID: file.transferSyntaxUID,
                transferSyntax: TransferSyntax(uid: file.transferSyntaxUID).name,
                photometricInterpretation: file.photometricInterpretation, bitsStored: file.bitsStored,
                windowCenter: window?.center, windowWidth: window?.width, warnings: series.warnings)
        }
        return Report(
            path: path, series: summaries,
            skipped: scan.skipped.map { ["file": $0.file, "reason": $0.reason] })
    }

    /// The report as indented JSON (keys sorted).
    public static func json(_ report: Report) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }

    /// The report as text for people.
    public static func text(_ report: Report) -> String {
        var lines: [String] = []
        for (index, series) in report.series.enumerated() {
            lines.append("Series \(index + 1): \(series.seriesInstanceUID)")
            lines.append("  patient:        \(series.patientName) (\(series.patientID))")
            lines.append("  study:          \(series.studyDescription)")
            lines.append("  series:         \(series.seriesDescription)")
            lines.append("  modality:       \(series.modality)")
            lines.append(
                "  size:           \(series.rows) rows × \(series.columns) columns, \(series.frames) "
                    + "frame\(series.frames == 1 ? "" : "s") in \(series.files) file\(series.files == 1 ? "" : "s")")
            func numbers(_ values: [Double]) -> String {
                values.map { String(format: "%g", $0) }.joined(separator: ", ")
            }
            lines.append("  spacing:        \(numbers(series.spacing)) mm (z, y, x)")
            lines.append("  origin:         \(numbers(series.origin)) mm (x, y, z, LPS; centre of the first voxel)")
            lines.append("  direction:      \(numbers(series.direction)) (row-major; columns along x, y, z index)")
            lines.append("  transfer:       \(series.transferSyntax) (\(series.transferSyntaxUID))")
            lines.append("  photometric:    \(series.photometricInterpretation), \(series.bitsStored) bits stored")
            if let center = series.windowCenter, let width = series.windowWidth {
                lines.append(
                    "  window:         centre \(String(format: "%g", center)), width \(String(format: "%g", width))")
            } else {
                lines.append("  window:         none (auto)")
            }
            for warning in series.warnings { lines.append("  warning:        \(warning)") }
        }
        if !report.skipped.isEmpty {
            lines.append("Skipped \(report.skipped.count) file\(report.skipped.count == 1 ? "" : "s"):")
            for entry in report.skipped.prefix(200) {
                lines.append("  \(entry["file"] ?? ""): \(entry["reason"] ?? "")")
            }
            if report.skipped.count > 200 {
                lines.append("  … and \(report.skipped.count - 200) more (--json lists all)")
            }
        }
        lines.append(summary(report))
        return lines.joined(separator: "\n")
    }

    /// "Scanned 1000 files: 950 in 1 series, 50 skipped."
    public static func summary(_ report: Report) -> String {
        let used = report.series.map(\.files).reduce(0, +)
        let total = used + report.skipped.count
        return "Scanned \(total) file\(total == 1 ? "" : "s"): \(used) in \(report.series.count) series, "
            + "\(report.skipped.count) skipped."
    }
}

extension InfoWorkflow {
    /// What a NIfTI file holds and where it is (the geometry contract: spacing z, y, x; origin and direction
    /// in LPS, as SimpleITK gives them), as text or JSON; nil when `path` is not a NIfTI file. With `statistics`
    /// the voxels are read too: their minimum, maximum and mean after scaling, and the read's wall time.
    ///
    /// - Throws: the reader's errors naming the file.
    public static func niftiDescription(
        _ path: String, limits: ReadLimits, json: Bool,
        statistics: Bool = false
    ) throws -> String? {
        guard (try? ImageFormats.format(of: path)) is NIfTIFormat else { return nil }
        var voxels: (minimum: Double, maximum: Double, mean: Double, seconds: Double, cpuSeconds: Double)?
        let image: NIfTIHeader
        if statistics {
            func cpuTime() -> Double { Double(clock()) / Double(CLOCKS_PER_SEC) }
            let (start, cpuStart) = (DispatchTime.now().uptimeNanoseconds, cpuTime())
            let read = try NIfTIImage.read(path, limits: limits)
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            let cpuSeconds = cpuTime() - cpuStart
            image = read.header
            let values = read.values
            let sum = values.reduce(0.0) { $0 + Double($1) }
            voxels = (
                Double(values.min() ?? 0), Double(values.max() ?? 0), sum / Double(max(values.count, 1)),
                seconds, cpuSeconds
            )
        } else {
            image = try NIfTIHeader.read(path, limits: limits)
        }
        let geometry = image.geometry
        if json {
            var object: [String: Any] = [
                "path": path, "format": "NIfTI-\(image.version)", "dimensions": image.dimensions,
                "datatype": image.datatype, "spacing": geometry.spacing, "origin": geometry.origin,
                "direction": geometry.direction, "qform_code": image.qformCode, "sform_code": image.sformCode,
                "geometry_source": image.geometrySource
            ]
            if let voxels {
                object["statistics"] = [
                    "min": voxels.minimum, "max": voxels.maximum, "mean": voxels.mean,
                    "read_seconds": voxels.seconds, "read_cpu_seconds": voxels.cpuSeconds
                ]
            }
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            return String(decoding: data, as: UTF8.self)
        }
        func numbers(_ values: [Double]) -> String { values.map { String(format: "%g", $0) }.joined(separator: ", ") }
        return """
            \(path): NIfTI-\(image.version), datatype \(image.datatype)
              dimensions:  \(image.dimensions.map(String.init).joined(separator: " × ")) (x fastest)
              spacing:     \(numbers(geometry.spacing)) mm (z, y, x)
              origin:      \(numbers(geometry.origin)) mm (x, y, z, LPS; centre of voxel 0)
              direction:   \(numbers(geometry.direction)) (row-major; columns along x, y, z index, LPS)
              from:        \(image.geometrySource) (qform_code \(image.qformCode), sform_code \(image.sformCode))
            """
                + (voxels.map {
                    String(
                        format: "\n  voxels:      min %g, max %g, mean %g (read in %.3f s)", $0.minimum,
                        $0.maximum, $0.mean, $0.seconds)
                } ?? "")
    }
}

extension InfoWorkflow {
    /// What a NRRD file (a 3D Slicer segmentation with its segments) or an RT Structure Set holds, as text or
    /// JSON; nil for other files.
    ///
    /// - Throws: the reader's errors naming the file.
    public static func labelFileDescription(_ path: String, limits: ReadLimits, json: Bool) throws -> String? {
        let format = try? ImageFormats.format(of: path)
        var object: [String: Any] = ["path": path]
        var lines: [String] = []
        func numbers(_ values: [Double]) -> String { values.map { String(format: "%g", $0) }.joined(separator: ", ") }
        if format is NRRDFormat {
            let header = try NRRDHeader.read(path, limits: limits)
            let geometry = header.geometry
            let segments = try SlicerSegment.all(in: header)
            object.merge([
                "format": "NRRD", "type": header.type.rawValue, "sizes": header.sizes, "kinds": header.kinds,
                "encoding": header.encoding.rawValue, "spacing": geometry.spacing, "origin": geometry.origin,
                "direction": geometry.direction,
                "segments": segments.map { ["name": $0.name, "label_value": $0.labelValue, "layer": $0.layer] }
            ]) { $1 }
            lines = [
                "\(path): NRRD, \(header.type.rawValue), \(header.encoding.rawValue)",
                "  sizes:       \(header.sizes.map(String.init).joined(separator: " × ")) (fastest first; kinds "
                    + "\(header.kinds.joined(separator: " ")))",
                "  spacing:     \(numbers(geometry.spacing)) mm (z, y, x)",
                "  origin:      \(numbers(geometry.origin)) mm (x, y, z, LPS; centre of voxel 0)",
                "  direction:   \(numbers(geometry.direction)) (row-major; columns along x, y, z index, LPS)"
            ]
            if !segments.isEmpty {
                lines.append("  segments:    \(segments.count) (3D Slicer segmentation)")
                lines += segments.map { "    '\($0.name)': value \($0.labelValue) in layer \($0.layer)" }
            }
        } else if format is RTStructureSetFormat {
            let set = try StructureSet(path: path, limits: limits)
            object.merge([
                "format": "RTSTRUCT", "label": set.label, "frame_of_reference": set.frameOfReferenceUID,
                "referenced_series": set.referencedSeriesUID ?? "",
                "rois": set.rois.map { roi in
                    [
                        "number": roi.number, "name": roi.name, "type": roi.interpretedType ?? "",
                        "contours": roi.contours.count,
                        "closed_planar": roi.contours.filter { $0.geometricType == "CLOSED_PLANAR" }.count
                    ] as [String: Any]
                }
            ]) { $1 }
            lines = [
                "\(path): RT Structure Set '\(set.label)'",
                "  frame of reference: \(set.frameOfReferenceUID)",
                "  referenced series:  \(set.referencedSeriesUID ?? "none named") (\(set.referencedImages.count) image(s))",
                "  ROIs:               \(set.rois.count)"
            ]
            lines += set.rois.map { roi in
                let closed = roi.contours.filter { $0.geometricType == "CLOSED_PLANAR" }.count
                return "    \(roi.number) '\(roi.name)'\(roi.interpretedType.map { " (\($0))" } ?? ""): "
                    + "\(roi.contours.count) contour(s), \(closed) closed planar"
            }
        } else {
            return nil
        }
        if json {
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            return String(decoding: data, as: UTF8.self)
        }
        return lines.joined(separator: "\n")
    }
}
