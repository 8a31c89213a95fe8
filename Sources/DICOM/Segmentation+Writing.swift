import SliceLabSupport

extension Segmentation {
    /// Writes a label map as a binary DICOM SEG that references the source series, so viewers (3D Slicer, OHIF)
    /// overlay it on the images: one segment per label value above 0 (named from `segmentLabels`, else
    /// "Label N"), one frame per segment and slice where that label occurs, as series number source + 1000.
    /// The file appears only when complete.
    ///
    /// - Parameters:
    ///   - labels: [slices, rows, columns] in the series' slice order (`Series.slices`).
    ///   - series: the source series (its SOP instances are referenced, with the frame number for a multi-frame
    ///     source).
    ///   - segmentLabels: names per label value.
    ///   - codings: category, type and region codes per label value (`SegmentCoding.tissue` for the others).
    ///   - segmentCount: when given, segments 1...segmentCount are all declared (absent values too) so that
    ///     segment number N is label value N and a reader gets the label values back; when nil, one segment per
    ///     value present, numbered in value order.
    ///   - uids: the Series and SOP Instance UIDs to give it (derived from its inputs, so a resend replaces);
    ///     new ones when nil.
    ///   - path: the SEG file to write.
    /// - Throws: `DICOMError.invalidSegmentation` when the labels do not match the series, `.unwritable` when
    ///   DCMTK refuses. Rests on `cdcmtk_seg_create`, `cdcmtk_seg_add_frame`, `cdcmtk_seg_save`.
    public static func write(
        labels: [Int32], series: Series, segmentLabels: [Int: String] = [:], codings: [Int: SegmentCoding] = [:],
        segmentCount: Int? = nil, seriesDescription: String = "SliceLab segmentation",
        uids: (series: String, instance: String)? = nil, to path: String
    ) throws {
        let first = series.first
        let plane = first.rows * first.columns
        guard labels.count == series.slices.count * plane else {
            throw DICOMError.invalidSegmentation(
                file: path,
                reason: "\(labels.count) labels for \(series.slices.count) slices of \(first.rows)×\(first.columns)")
        }
        let values = Set(labels.filter { $0 > 0 }).sorted()
        // DCMTK 3.6.7 refuses a SEG whose only frame is empty ("Invalid Object"), and OHIF and Slicer cannot load
        // one without frames: an empty map has no SEG.
        guard !values.isEmpty else {
            throw DICOMError.invalidSegmentation(
                file: path,
                reason: "the label map has no label above 0: a SEG needs a frame with a segment in it (write .nii.gz "
                    + "or .h5, or --dicom-output rtstruct, whose ROIs may have no contour)")
        }
        // Type 1 attributes the SEG copies or shares (PS3.3 A.51): DCMTK fills the type 2 ones empty itself but
        // refuses these with a bare "Missing Attribute(s)".
        for (tag, name) in [
            (DICOMTag.studyInstanceUID, "Study Instance UID (0020,000D)"),
            (.frameOfReferenceUID, "Frame of Reference UID (0020,0052)")
        ]
        where (first.dataset.string(tag) ?? "").isEmpty {
            throw DICOMError.missingSourceAttribute(file: first.path, attribute: name, output: path)
        }
        let writer = try DCMTKSegmentationHandle(
            source: first.path, rows: first.rows, columns: first.columns,
            seriesDescription: seriesDescription,
            seriesNumber: (first.dataset.int(.seriesNumber) ?? 0) + 1000,
            destination: path)
        if let uids { try writer.setUIDs(series: uids.series, instance: uids.instance) }
        if let segmentCount, let highest = values.last, Int(highest) > segmentCount {
            throw DICOMError.invalidSegmentation(
                file: path, reason: "label \(highest) is above the \(segmentCount) segments declared")
        }
        var numbers: [Int32: Int] = [:]
        let declared = segmentCount.map { (1...max($0, 1)).map(Int32.init) } ?? values
        for value in declared {
            numbers[value] = try writer.addSegment(
                label: segmentLabels[Int(value)] ?? "Label \(value)", coding: codings[Int(value)] ?? .tissue)
        }
        let pixel = first.pixelSpacing(frame: series.slices[0].frame)
        try writer.setGeometry(
            orientation: first.imageOrientation(frame: series.slices[0].frame) ?? [1, 0, 0, 0, 1, 0],
            rowSpacing: pixel?.row ?? 1, columnSpacing: pixel?.column ?? 1,
            thickness: series.sliceSpacing ?? first.sliceThickness() ?? 1)
        // Frames only where a segment occurs, segment by segment in slice order (as highdicom writes them).
        let frames = values.flatMap { value in series.slices.indices.map { (value, $0) } }
        for (value, index) in frames {
            let slice = series.slices[index]
            let mask = labels[(index * plane)..<((index + 1) * plane)].map { $0 == value ? UInt8(1) : 0 }
            guard mask.contains(1) else { continue }
            guard let classUID = slice.file.dataset.string(.sopClassUID),
                let instanceUID = slice.file.dataset.string(.sopInstanceUID)
            else {
                throw DICOMError.missingAttribute(file: slice.file.path, attribute: "SOP Class/Instance UID")
            }
            try writer.addFrame(
                mask, segment: numbers[value] ?? 1,
                position: slice.file.imagePosition(frame: slice.frame) ?? [0, 0, Double(index)],
                sourceClassUID: classUID, sourceInstanceUID: instanceUID,
                sourceFrame: slice.file.frameCount > 1 ? slice.frame + 1 : 0,
                sourcePath: slice.file.path, stackPosition: index + 1)
        }
        try writeAtomically(to: path) { temporary in try writer.save(to: temporary) }
    }
}
