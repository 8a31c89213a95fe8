import DICOM
import Foundation
import ImageFiles

/// Label maps written as binary DICOM SEG referencing their source series (`slicelab segment … --out OUT.dcm`,
/// `slicelab convert LABELS --reference SERIES OUT.dcm`), so results open over the images in 3D Slicer or OHIF.
public enum SegmentationExport {
    /// What a `.dcm` label output is (`--dicom-output`).
    public enum DICOMOutput: String, Sendable, CaseIterable {
        /// A binary DICOM SEG (the default).
        case seg
        /// An RT Structure Set of traced contours.
        case rtstruct

        var title: String { self == .seg ? "DICOM SEG" : "RT Structure Set" }
    }

    /// Segment labels for classes 1..<classCount: the checkpoint's `class_names` attribute (one name per class,
    /// background first) when it has one, else "class N".
    ///
    /// - Throws: `ImageFileError` when the checkpoint cannot be read.
    public static func classNames(checkpoint: String, classCount: Int) throws -> [Int: String] {
        let file = try HDF5File.open(checkpoint)
        var stored: [String] = []
        if file.hasAttribute("class_names") {
            switch try file.attribute("class_names") {
            case .strings(let names): stored = names
            case .string(let name): stored = [name]
            default: break
            }
        }
        return defaultNames(classCount: classCount, stored: stored)
    }

    /// The coded concepts of the checkpoint's classes (its `class_codes` attribute, keyed by class name, as
    /// `dataset.json`'s `class_codes`), by class index; empty when it has none.
    ///
    /// - Throws: `ImageFileError` when the checkpoint cannot be read; `InputError.invalidContent` for codes that
    ///   are not {class name: {category, type, region}}.
    public static func classCodings(checkpoint: String) throws -> [Int: SegmentCoding] {
        let file = try HDF5File.open(checkpoint)
        guard file.hasAttribute("class_codes"), let text = try file.attribute("class_codes").stringValue,
            file.hasAttribute("class_names"), case .strings(let names) = try file.attribute("class_names")
        else { return [:] }
        let codes: [String: SegmentCoding]
        do { codes = try JSONDecoder().decode([String: SegmentCoding].self, from: Data(text.utf8)) } catch {
            throw InputError.invalidContent(file: checkpoint, reason: "attribute class_codes: \(error)")
        }
        return Dictionary(
            uniqueKeysWithValues: codes.compactMap { name, coding in
                names.firstIndex(of: name).map { ($0, coding) }
            })
    }

    /// "class N" for every class 1..<classCount, replaced by a stored name where one is given and not empty.
    static func defaultNames(classCount: Int, stored: [String]) -> [Int: String] {
        var names: [Int: String] = [:]
        for value in 1..<max(classCount, 2) {
            let name = value < stored.count ? stored[value].trimmingCharacters(in: .whitespaces) : ""
            names[value] = name.isEmpty ? "class \(value)" : name
        }
        return names
    }

    /// Writes `labels` ([frames, rows, columns], frame k = slice k of `series`) as a binary SEG with segments
    /// 1...N for every class named in `classNames` or present (named from `classNames`, else "class N"), so segment
    /// number = label value; frames only where a class occurs. Atomic: the file appears only when complete.
    ///
    /// - Throws: `InputError.invalidContent` when the label map's shape does not match the series, or it has no
    ///   label above 0; `DICOMError` from the writer. Rests on `Segmentation.write`.
    public static func write(
        labels: LabelMap, series: Series, classNames: [Int: String], codings: [Int: SegmentCoding] = [:],
        uids: (series: String, instance: String)? = nil, to path: String
    ) throws {
        try checkFits(labels, series: series, output: path)
        // Every class 1...highest is a segment, so segment number N is label value N for any reader.
        let highest = max(Int(labels.labels.max() ?? 0), classNames.keys.max() ?? 0)
        var names = classNames
        for value in 1...highest where names[value] == nil { names[value] = "class \(value)" }
        try Segmentation.write(
            labels: labels.labels, series: series, segmentLabels: names, codings: codings, segmentCount: highest,
            seriesDescription: "SliceLab segmentation", uids: uids, to: path)
    }

    /// Writes `labels` as an RT Structure Set on `series`: one ROI per class named in `classNames` (in class order,
    /// the overlays' colours, interpreted type `interpretedType`), its contours traced slice by slice
    /// (`StructureSet.write`). Atomic.
    ///
    /// - Returns: contours written per class.
    /// - Throws: `InputError.invalidContent` when the label map does not fit the series; `DICOMError` from the
    ///   writer.
    @discardableResult
    public static func writeStructureSet(
        labels: LabelMap, series: Series, classNames: [Int: String], interpretedType: String = "ORGAN",
        uids: (series: String, instance: String)? = nil, to path: String
    ) throws -> [Int: Int] {
        try checkFits(labels, series: series, output: path)
        let present = Set(labels.labels.filter { $0 > 0 }.map(Int.init))
        let rois = Set(classNames.keys.filter { $0 > 0 }).union(present).sorted().map { label in
            let color = Overlay.color(ofClass: label)
            return StructureSet.ROIDescription(
                label: label, name: classNames[label] ?? "class \(label)",
                color: (Int(color.0), Int(color.1), Int(color.2)), interpretedType: interpretedType)
        }
        return try StructureSet.write(labels: labels.labels, series: series, rois: rois, uids: uids, to: path)
    }

    /// `slicelab convert LABELS --reference SERIES OUT.dcm`: a label file (`.h5` with `/labels`, a gray `.png`) as
    /// a SEG over the first series of `reference` (a single-frame DICOM file or a folder), labels named "class N".
    ///
    /// - Returns: lines for the user.
    /// - Throws: `InputError` for a label map that does not fit the series, `DICOMError`, `ImageFileError`.
    public static func convert(
        labels path: String, reference: String, to output: String, as kind: DICOMOutput = .seg,
        options: LabelReadingOptions = LabelReadingOptions()
    ) throws -> [String] {
        let loaded = try LoadedLabels.read(path, options: options)
        let series = try sourceSeries(reference)
        let classCount = Int(loaded.labels.labels.max() ?? 0) + 1
        var names = defaultNames(classCount: classCount, stored: [])
        names.merge(loaded.classNames) { _, named in named }
        switch kind {
        case .seg:
            try write(labels: loaded.labels, series: series, classNames: names, to: output)
        case .rtstruct:
            try writeStructureSet(labels: loaded.labels, series: series, classNames: names, to: output)
        }
        return loaded.notes + [
            "wrote \(output): \(kind.title) of \(path) over series \(series.seriesInstanceUID) "
                + "(\(series.slices.count) slice(s))"
        ]
    }

    /// Refuses a label map whose shape is not the series'.
    static func checkFits(_ labels: LabelMap, series: Series, output path: String) throws {
        let first = series.first
        guard labels.frames == series.slices.count, labels.rows == first.rows, labels.columns == first.columns else {
            throw InputError.invalidContent(
                file: path,
                reason: "the label map is \(labels.frames)×\(labels.rows)×\(labels.columns) but the series "
                    + "\(series.seriesInstanceUID) is \(series.slices.count)×\(first.rows)×\(first.columns)")
        }
    }

    /// The first series of a DICOM file or folder, as a SEG source (single-frame images or multi-frame files).
    ///
    /// - Throws: `DICOMError` naming the file and the cause.
    public static func sourceSeries(_ path: String) throws -> Series {
        try Series.scan(path).series[0]
    }
}
