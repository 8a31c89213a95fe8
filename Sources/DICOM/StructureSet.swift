import CDCMTK
import Foundation
import SliceLabSupport

/// An RT Structure Set (RTSTRUCT) as DCMTK's `dcmrt` reads its IOD: the ROIs with their closed planar contours
/// in patient coordinates (LPS mm), what each contour and the set reference, and each ROI's colour and
/// interpreted type.
public struct StructureSet: Sendable {
    public struct Contour: Sendable {
        /// `CLOSED_PLANAR`, `POINT`, `OPEN_PLANAR`, `OPEN_NONPLANAR`.
        public var geometricType: String
        /// The SOP Instance UID of the image it lies on, when the file says.
        public var referencedImage: String?
        /// (x, y, z) in mm, LPS.
        public var points: [[Double]]
    }

    public struct ROI: Sendable {
        public var number: Int
        public var name: String
        public var frameOfReferenceUID: String
        /// 0…255 each, when given.
        public var color: (Int, Int, Int)?
        /// `RTROIInterpretedType` (`ORGAN`, `GTV`, …), when given.
        public var interpretedType: String?
        public var contours: [Contour]
    }

    public let path: String
    public let frameOfReferenceUID: String
    /// The first referenced series, when the set references one.
    public let referencedSeriesUID: String?
    public let label: String
    public let sopInstanceUID: String
    /// Every image the Referenced Frame of Reference Sequence lists.
    public let referencedImages: [String]
    public let rois: [ROI]

    /// The RT Structure Storage SOP class.
    public static let sopClassUID = "1.2.840.10008.5.1.4.1.1.481.3"

    /// Whether the DICOM file at `path` is an RT Structure Set (its SOP class, or modality RTSTRUCT).
    public static func isStructureSet(_ path: String, limits: ReadLimits = .standard) -> Bool {
        guard let file = try? DICOMFile(path: path, limits: limits) else { return false }
        return file.dataset.string(.sopClassUID) == sopClassUID || file.dataset.string(.modality) == "RTSTRUCT"
    }

    /// Reads the structure set at `path`.
    ///
    /// - Throws: `DICOMError.unreadable` for a file DCMTK cannot read, `.invalidStructureSet` for one that is not
    ///   a structure set or breaks its IOD (an ROI contour of an unlisted ROI, contour data not in triples).
    public init(path: String, limits: ReadLimits = .standard) throws {
        let file = try DICOMFile(path: path, limits: limits)
        guard file.dataset.string(.sopClassUID) == Self.sopClassUID || file.dataset.string(.modality) == "RTSTRUCT"
        else {
            throw DICOMError.invalidStructureSet(
                file: path, roi: nil,
                reason: "SOP class \(file.dataset.string(.sopClassUID) ?? "none") is not RT Structure Set Storage")
        }
        var message = [CChar](repeating: 0, count: 512)
        guard let rt = cdcmtk_rt_read(file.handle.pointer, &message, message.count) else {
            throw DICOMError.invalidStructureSet(file: path, roi: nil, reason: String(nulTerminated: message))
        }
        defer { cdcmtk_rt_free(rt) }
        let text = { (field: Int32) in String(cString: cdcmtk_rt_text(rt, field)) }
        self.path = path
        frameOfReferenceUID = text(0)
        referencedSeriesUID = text(1).isEmpty ? nil : text(1)
        (label, sopInstanceUID) = (text(2), text(3))
        referencedImages = (0..<cdcmtk_rt_referenced_image_count(rt)).map {
            String(cString: cdcmtk_rt_referenced_image(rt, $0))
        }
        rois = try (0..<cdcmtk_rt_roi_count(rt)).map { index in
            var rgb: [Int32] = [-1, -1, -1]
            cdcmtk_rt_roi_color(rt, index, &rgb)
            let name = String(cString: cdcmtk_rt_roi_name(rt, index))
            let contours = try (0..<cdcmtk_rt_contour_count(rt, index)).map { c -> Contour in
                let count = cdcmtk_rt_contour_point_count(rt, index, c)
                let flat =
                    count == 0
                    ? [] : Array(UnsafeBufferPointer(start: cdcmtk_rt_contour_points(rt, index, c), count: 3 * count))
                guard flat.allSatisfy(\.isFinite) else {
                    throw DICOMError.invalidStructureSet(
                        file: path, roi: name, reason: "contour \(c + 1) has a non-finite coordinate")
                }
                let image = String(cString: cdcmtk_rt_contour_image(rt, index, c))
                return Contour(
                    geometricType: String(cString: cdcmtk_rt_contour_type(rt, index, c)),
                    referencedImage: image.isEmpty ? nil : image,
                    points: (0..<count).map { Array(flat[3 * $0..<3 * $0 + 3]) })
            }
            let type = String(cString: cdcmtk_rt_roi_type(rt, index))
            return ROI(
                number: Int(cdcmtk_rt_roi_number(rt, index)), name: name,
                frameOfReferenceUID: String(cString: cdcmtk_rt_roi_frame(rt, index)),
                color: rgb.allSatisfy { (0...255).contains($0) } ? (Int(rgb[0]), Int(rgb[1]), Int(rgb[2])) : nil,
                interpretedType: type.isEmpty ? nil : type, contours: contours)
        }
    }
}
