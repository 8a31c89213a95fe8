import DICOM
import ImageFiles
import SliceLabSupport

/// DICOM: a file (Part 10 with its preamble, or a bare data set) or a folder of series. Images are modality
/// values (colour as RGB); label maps are DICOM SEG.
public struct DICOMFormat: ImageFormat {
    public var name: String { "DICOM (a file or a series folder; SEG for labels)" }
    public var fileExtensions: [String] { ["dcm", "dicom"] }

    /// "DICM" after the 128-byte preamble, or a bare data set (as DCMTK accepts files without a preamble): a
    /// first element of group 0002 or 0008, little or big endian, followed by an explicit VR (two capital
    /// letters) or an implicit VR's 32-bit length below 1 MiB.
    public func recognizes(_ head: [UInt8]) -> Bool {
        if head.count >= 132, Array(head[128..<132]) == Array("DICM".utf8) { return true }
        guard head.count >= 8 else { return false }
        let littleGroup = UInt16(head[0]) | UInt16(head[1]) << 8
        let bigGroup = UInt16(head[0]) << 8 | UInt16(head[1])
        guard [0x0002, 0x0008].contains(littleGroup) || [0x0002, 0x0008].contains(bigGroup) else { return false }
        let capitals = UInt8(ascii: "A")...UInt8(ascii: "Z")
        if capitals.contains(head[4]) && capitals.contains(head[5]) { return true }
        let little = UInt32(head[4]) | UInt32(head[5]) << 8 | UInt32(head[6]) << 16 | UInt32(head[7]) << 24
        let big = UInt32(head[4]) << 24 | UInt32(head[5]) << 16 | UInt32(head[6]) << 8 | UInt32(head[7])
        return min(little, big) < 1 << 20
    }

    public func readImage(_ path: String, limits: ReadLimits) throws -> ScanImage {
        try ImageLoader.loadDICOM(path, limits: limits)
    }

    public func frames(_ path: String, limits: ReadLimits) throws -> FrameReader {
        try FrameReader.dicom(path, limits: limits)
    }

    public func readLabels(_ path: String, limits: ReadLimits, options _: LabelReadingOptions) throws -> LoadedLabels {
        try Self.loadDICOMSegmentation(path, limits: limits)
    }

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
