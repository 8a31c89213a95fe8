import CDCMTK

/// Errors reading or writing DICOM, each naming the file and the cause.
public enum DICOMError: Error, CustomStringConvertible, Equatable, Sendable {
    /// Not a DICOM file, or DCMTK could not parse it (truncated, corrupt).
    case unreadable(file: String, reason: String)
    /// A required attribute is missing or has an unusable value.
    case missingAttribute(file: String, attribute: String)
    /// The dataset has no Pixel Data element.
    case noPixelData(file: String)
    /// Pixel Data holds fewer bytes than rows × columns × samples × frames need.
    case shortPixelData(file: String, expectedBytes: Int, actualBytes: Int)
    /// The transfer syntax is one SliceLab cannot decode.
    case unsupportedTransferSyntax(uid: String, file: String)
    /// The image uses a pixel layout SliceLab does not support (bits allocated, photometric interpretation…).
    case unsupportedImage(file: String, reason: String)
    /// Rows, columns, frames or bits that cannot describe a real image, refused before allocating.
    case impossibleDimensions(file: String, reason: String)
    /// A frame number outside 0..<frameCount.
    case frameOutOfRange(file: String, frame: Int, frameCount: Int)
    /// A compressed frame that its codec could not decode.
    case decodeFailed(file: String, frame: Int, reason: String)
    /// A folder in which no file could be loaded as an image series.
    case noSeries(folder: String, reasons: [String])
    /// A segmentation that is malformed or does not match its source images.
    case invalidSegmentation(file: String, reason: String)
    /// An RT Structure Set that is malformed or does not fit the series it lies on: the file, the ROI when one is
    /// at fault, and the cause.
    case invalidStructureSet(file: String, roi: String?, reason: String)
    /// A DICOM network peer that refused, could not be reached, or failed an exchange: who and why.
    case network(peer: String, reason: String)
    /// A file that could not be written.
    case unwritable(file: String, reason: String)
    /// A source image lacks a type 1 attribute that a derived object (a SEG) must copy or share with it.
    case missingSourceAttribute(file: String, attribute: String, output: String)

    public var description: String {
        switch self {
        case .unreadable(let file, let reason): return "\(file): cannot read DICOM: \(reason)"
        case .missingSourceAttribute(let file, let attribute, let output):
            return "\(file): has no \(attribute), which a DICOM SEG must share with its source series; "
                + "\(output) was not written (add it to the series, e.g. with dcmodify, and write again)"
        case .missingAttribute(let file, let attribute):
            return "\(file): missing or invalid \(attribute); the file is not a usable image"
        case .noPixelData(let file): return "\(file): no Pixel Data (7FE0,0010); it is not an image"
        case .shortPixelData(let file, let expected, let actual):
            return "\(file): Pixel Data holds \(actual) bytes but the image needs \(expected); the file is truncated"
        case .unsupportedTransferSyntax(let uid, let file):
            return "\(file): transfer syntax \(uid) is not supported; convert it with dcmconv or gdcmconv"
        case .unsupportedImage(let file, let reason): return "\(file): unsupported image: \(reason)"
        case .impossibleDimensions(let file, let reason): return "\(file): impossible image dimensions: \(reason)"
        case .frameOutOfRange(let file, let frame, let count):
            return "\(file): frame \(frame) does not exist (the file has \(count) frame\(count == 1 ? "" : "s"))"
        case .decodeFailed(let file, let frame, let reason): return "\(file): cannot decode frame \(frame): \(reason)"
        case .noSeries(let folder, let reasons):
            return "\(folder): no loadable DICOM image series"
                + (reasons.isEmpty
                    ? ""
                    : ":\n  "
                        + reasons.prefix(20).joined(separator: "\n  "))
        case .invalidSegmentation(let file, let reason): return "\(file): invalid DICOM SEG: \(reason)"
        case .invalidStructureSet(let file, let roi, let reason):
            return "\(file): RT Structure Set\(roi.map { ", ROI '\($0)'" } ?? ""): \(reason)"
        case .unwritable(let file, let reason): return "\(file): cannot write DICOM: \(reason)"
        case .network(let peer, let reason): return "\(peer): \(reason)"
        }
    }
}

/// The version of DCMTK underneath the reader.
public var dcmtkVersion: String { String(cString: cdcmtk_version()) }
