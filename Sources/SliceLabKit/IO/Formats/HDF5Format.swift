import ImageFiles
import SliceLabSupport

/// HDF5: an image in `/image`, a label map in `/labels` (the layouts `slicelab convert` and `segment` write).
struct HDF5Format: ImageFormat {
    var name: String { "HDF5 (/image or /labels)" }
    var fileExtensions: [String] { ["h5", "hdf5"] }

    /// The format signature at byte 0, or after a user block of 512, 1024 or 2048 bytes.
    func recognizes(_ head: [UInt8]) -> Bool {
        let signature: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]
        return [0, 512, 1024, 2048].contains { offset in
            head.count >= offset + 8 && Array(head[offset..<(offset + 8)]) == signature
        }
    }

    func readImage(_ path: String, limits: ReadLimits) throws -> ScanImage {
        try ImageLoader.loadHDF5(path, limits: limits)
    }

    func frames(_ path: String, limits: ReadLimits) throws -> FrameReader {
        try FrameReader.hdf5(path, limits: limits)
    }

    func readLabels(_ path: String, limits: ReadLimits) throws -> EvaluateInputs.LoadedLabels {
        try EvaluateInputs.loadHDF5(path, limits: limits)
    }
}
