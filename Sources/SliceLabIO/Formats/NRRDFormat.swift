import Foundation
import ImageFiles
import SliceLabSupport

/// NRRD (`.nrrd`, `.nhdr`) images and label maps, and 3D Slicer's segmentations (`.seg.nrrd`): a NRRD whose
/// `Segment{N}_…` fields list the segments, each a label value in a layer (a 4-D file with a leading `list` axis
/// holds overlapping segments in several layers). Recognised by the `NRRD000N` magic.
///
/// A segmentation reads as a label map of classes: each segment's voxels (its label value in its layer) become
/// the class `LabelReadingOptions.mapping` gives its name (file order by default); where segments overlap the
/// higher class wins, or with `StructureMapping.Overlap.error` the file is refused naming both.
public struct NRRDFormat: ImageFormat {
    public init() {}

    public var name: String { "NRRD (.nrrd, .nhdr; 3D Slicer's .seg.nrrd for labels)" }
    public var fileExtensions: [String] { ["seg.nrrd", "nrrd", "nhdr"] }

    public func recognizes(_ head: [UInt8]) -> Bool { NRRDHeader.recognizes(head) }

    public func readImage(_ path: String, limits: ReadLimits) throws -> ScanImage {
        try Self.scanImage(NRRDImage.read(path, limits: limits))
    }

    public func frames(_ path: String, limits: ReadLimits) throws -> FrameReader {
        let image = try NRRDImage.read(path, limits: limits)
        var reader = FrameReader.whole(try Self.scanImage(image))
        reader.geometry = image.geometry
        return reader
    }

    /// (slices, rows, columns, components) of a file whose non-spatial axis, if any, is the fastest (as ITK and
    /// Slicer write vectors and layers).
    static func extents(_ header: NRRDHeader) throws -> (Int, Int, Int, Int) {
        let others = (0..<header.sizes.count).filter { !header.domainAxes.contains($0) }
        guard others.count <= 1, others.allSatisfy({ $0 == 0 }), header.domainAxes.count >= 2 else {
            throw InputError.unsupportedFile(
                file: header.path,
                reason: "axes of kinds \(header.kinds.joined(separator: " ")): SliceLab reads 2-D and 3-D NRRD "
                    + "images with at most one non-spatial axis, the fastest")
        }
        let spatial = header.domainAxes.map { header.sizes[$0] } + [1]
        return (spatial.count == 4 ? spatial[2] : 1, spatial[1], spatial[0], others.first.map { header.sizes[$0] } ?? 1)
    }

    public static func scanImage(_ image: NRRDImage) throws -> ScanImage {
        let (slices, rows, columns, channels) = try extents(image.header)
        return ScanImage(
            frames: slices, rows: rows, columns: columns, channels: channels, values: image.values,
            spacing: image.geometry.spacing, source: image.path, hasSpacing: true)
    }

    public func readLabels(_ path: String, limits: ReadLimits, options: LabelReadingOptions) throws -> LoadedLabels {
        let image = try NRRDImage.read(path, limits: limits)
        let (slices, rows, columns, layers) = try Self.extents(image.header)
        let segments = try SlicerSegment.all(in: image.header)
        var labels = [Int32](repeating: 0, count: slices * rows * columns)
        var notes: [String] = []
        var classNames: [Int: String] = [:]
        if segments.isEmpty {
            guard layers == 1 else {
                throw InputError.invalidContent(
                    file: path, reason: "a label map has one value per voxel; this NRRD has \(layers) per voxel")
            }
            for (index, value) in image.values.enumerated() {
                guard value >= 0, value <= 65535, value == value.rounded() else {
                    throw InputError.invalidContent(
                        file: path, reason: "label \(value) at voxel \(index) is not an integer in 0...65535")
                }
                labels[index] = Int32(value)
            }
        } else {
            let mapping = options.mapping
            for (order, segment) in segments.enumerated() {
                guard let label = mapping.label(name: segment.name, index: order) else { continue }
                guard segment.layer < layers else {
                    throw InputError.invalidContent(
                        file: path, reason: "segment '\(segment.name)' is in layer \(segment.layer) of \(layers)")
                }
                let (value, claim) = (Float(segment.labelValue), Int32(label))
                for voxel in labels.indices where image.values[voxel * layers + segment.layer] == value {
                    let current = labels[voxel]
                    if current != 0 && current != claim && mapping.overlap == .error {
                        throw InputError.invalidContent(
                            file: path,
                            reason:
                                "segments '\(classNames[Int(current)] ?? "?")' and '\(segment.name)' overlap (--overlap "
                                + "error); without it the higher class wins")
                    }
                    labels[voxel] = max(current, claim)
                }
                classNames[label] = classNames[label] ?? segment.name
            }
            notes.append(mapping.summary(segments.map(\.name)))
        }
        var loaded = LoadedLabels(
            labels: LabelMap(
                frames: slices, rows: rows, columns: columns, labels: labels, spacing: image.geometry.spacing),
            hasSpacing: true, geometry: image.geometry, notes: notes)
        loaded.classNames = classNames
        return loaded
    }

    /// Writes `labels` as a 3D Slicer segmentation (one layer, one segment per named class > 0, label value =
    /// class, colours as the overlays', extent = the class's bounding box) with `geometry`, gzip-encoded.
    ///
    /// - Throws: `ImageFileError.unwritable`.
    public static func writeSegmentation(
        _ labels: LabelMap, geometry: VolumeGeometry, classNames: [Int: String], to path: String
    ) throws {
        let (rows, columns) = (labels.rows, labels.columns)
        var keyValues: [(key: String, value: String)] = [
            ("Segmentation_ContainedRepresentationNames", "Binary labelmap|"),
            ("Segmentation_ConversionParameters", ""),
            ("Segmentation_MasterRepresentation", "Binary labelmap"),
            ("Segmentation_ReferenceImageExtentOffset", "0 0 0")
        ]
        for (index, label) in classNames.keys.filter({ $0 > 0 }).sorted().enumerated() {
            var (low, high) = ([Int.max, Int.max, Int.max], [-1, -1, -1])
            for (voxel, value) in labels.labels.enumerated() where value == label {
                let position = [voxel % columns, voxel / columns % rows, voxel / (rows * columns)]
                for axis in 0..<3 {
                    (low[axis], high[axis]) = (min(low[axis], position[axis]), max(high[axis], position[axis]))
                }
            }
            let extent =
                high[0] < 0
                ? "0 -1 0 -1 0 -1" : (0..<3).map { "\(low[$0]) \(high[$0])" }.joined(separator: " ")
            let color = Overlay.color(ofClass: label)
            let prefix = "Segment\(index)_"
            keyValues += [
                (
                    prefix + "Color",
                    [color.0, color.1, color.2].map { String(format: "%.6g", Double($0) / 255) }
                        .joined(separator: " ")
                ),
                (prefix + "ColorAutoGenerated", "0"),
                (prefix + "Extent", extent),
                (prefix + "ID", "Segment_\(label)"),
                (prefix + "LabelValue", "\(label)"),
                (prefix + "Layer", "0"),
                (prefix + "Name", classNames[label] ?? "class \(label)"),
                (prefix + "NameAutoGenerated", "0"),
                (prefix + "Tags", "|")
            ]
        }
        try NRRDImage.write(
            labels.labels.map(Float.init), type: (labels.labels.max() ?? 0) > 255 ? .uint16 : .uint8,
            sizes: [columns, rows, labels.frames], geometry: geometry, keyValues: keyValues, to: path)
    }
}

/// One segment of a 3D Slicer segmentation (`Segment{N}_ID`, `_Name`, `_LabelValue`, `_Layer`, `_Color`), as
/// Slicer's `vtkMRMLSegmentationStorageNode` writes them.
public struct SlicerSegment: Equatable, Sendable {
    public var id: String
    public var name: String
    public var labelValue: Int
    public var layer: Int

    /// The segments of `header`, Segment0, Segment1, … until the first missing index.
    ///
    /// - Throws: `InputError.invalidContent` for a segment without a usable label value or layer.
    public static func all(in header: NRRDHeader) throws -> [SlicerSegment] {
        var segments: [SlicerSegment] = []
        while let id = header.value("Segment\(segments.count)_ID") {
            let prefix = "Segment\(segments.count)_"
            // Files before Slicer 4.11 have no label value: segment N is N + 1 in its own layer N.
            let labelText = header.value(prefix + "LabelValue") ?? "1"
            let layerText = header.value(prefix + "Layer") ?? "\(segments.count)"
            guard let label = Int(labelText), label > 0, let layer = Int(layerText), layer >= 0 else {
                throw InputError.invalidContent(
                    file: header.path,
                    reason: "segment \(segments.count) ('\(id)') has label value '\(labelText)' and layer "
                        + "'\(layerText)'; a segment needs a label value > 0 and a layer ≥ 0")
            }
            segments.append(
                SlicerSegment(id: id, name: header.value(prefix + "Name") ?? id, labelValue: label, layer: layer))
        }
        return segments
    }
}
