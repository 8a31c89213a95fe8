import ImageIO

/// DICOM: a file (Part 10 with its preamble, or a bare data set) or a folder of series. Images are modality
/// values (colour as RGB); label maps are DICOM SEG.
struct DICOMFormat: ImageFormat {
    var name: String { "DICOM (a file or a series folder; SEG for labels)" }
    var fileExtensions: [String] { ["dcm", "dicom"] }

    /// "DICM" after the 128-byte preamble, or a bare data set that starts with a group 0002 or 0008 element in
    /// little- or big-endian order (as DCMTK accepts files without a preamble).
    func recognizes(_ head: [UInt8]) -> Bool {
        if head.count >= 132, Array(head[128..<132]) == Array("DICM".utf8) { return true }
        guard head.count >= 8 else { return false }
        let littleGroup = UInt16(head[0]) | UInt16(head[1]) << 8
        let bigGroup = UInt16(head[0]) << 8 | UInt16(head[1])
        return [0x0002, 0x0008].contains(littleGroup) || [0x0002, 0x0008].contains(bigGroup)
    }

    func readImage(_ path: String, limits: ReadLimits) throws -> ScanImage {
        try ImageLoader.loadDICOM(path, limits: limits)
    }

    func frames(_ path: String, limits: ReadLimits) throws -> FrameReader {
        try FrameReader.dicom(path, limits: limits)
    }

    func readLabels(_ path: String, limits: ReadLimits) throws -> EvaluateInputs.LoadedLabels {
        try EvaluateInputs.loadDICOMSegmentation(path, limits: limits)
    }
}
