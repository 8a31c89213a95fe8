import Foundation
import SliceLabSupport

/// A DICOM Segmentation (SEG, PS3.3 A.51, C.8.20): binary or fractional segment frames, decoded into label maps.
///
/// Each SEG frame holds one segment on one source image frame; the segment number comes from the frame's
/// Segment Identification functional group (per-frame, else shared), the source from its Derivation Image
/// Sequence (ReferencedSOPInstanceUID, ReferencedFrameNumber) and its place from Plane Position (Patient).
public struct Segmentation: Sendable {
    public enum Kind: String, Sendable {
        case binary = "BINARY"
        case fractional = "FRACTIONAL"
    }

    public struct Segment: Sendable, Equatable {
        public let number: Int
        public let label: String

        public init(number: Int, label: String) {
            self.number = number
            self.label = label
        }
    }

    /// One SEG frame: which segment, where, and its mask (row-major, true inside the segment).
    public struct Frame: Sendable {
        public let segmentNumber: Int
        public let referencedSOPInstanceUID: String?
        /// 1-based, as in DICOM; nil when the source is a single-frame image.
        public let referencedFrameNumber: Int?
        public let position: [Double]?
        public let mask: [Bool]
    }

    public let path: String
    public let kind: Kind
    public let rows: Int
    public let columns: Int
    public let segments: [Segment]
    public let frames: [Frame]
    /// Pixel spacing (row, column) in millimetres, if the SEG carries it.
    public let pixelSpacing: (row: Double, column: Double)?
    /// The slice normal from the SEG's orientation, if it has one.
    public let normal: [Double]?

    /// Reads a SEG file. Fractional frames count as inside where value / MaximumFractionalValue ≥ 0.5.
    ///
    /// - Throws: `DICOMError.invalidSegmentation` when the file is not a SEG or its frames name no segment;
    ///   the reader's errors for its pixels; `ImageFileError.tooLarge` for frames over `limits`.
    public init(path: String, limits: ReadLimits = .standard) throws {
        let file = try DICOMFile(path: path, limits: limits)
        self.path = path
        let data = file.dataset
        guard let type = data.string(.segmentationType), let kind = Kind(rawValue: type.uppercased()) else {
            throw DICOMError.invalidSegmentation(file: path, reason: "no Segmentation Type (0062,0001); not a SEG")
        }
        guard file.hasPixelData, file.samplesPerPixel == 1 else {
            throw DICOMError.invalidSegmentation(file: path, reason: "no single-sample Pixel Data")
        }
        self.kind = kind
        rows = file.rows
        columns = file.columns
        segments = data.items(.segmentSequence).compactMap { item in
            item.int(.segmentNumber).map { Segment(number: $0, label: item.string(.segmentLabel) ?? "") }
        }
        guard !segments.isEmpty else {
            throw DICOMError.invalidSegmentation(file: path, reason: "empty Segment Sequence (0062,0002)")
        }
        let maximum = Double(data.int(.maximumFractionalValue) ?? ((1 << file.bitsStored) - 1))
        var frames: [Frame] = []
        for index in 0..<file.frameCount {
            guard
                let number = file.functionalGroupValue(
                    frame: index, sequence: .segmentIdentificationSequence,
                    {
                        $0.int(.referencedSegmentNumber)
                    })
            else {
                throw DICOMError.invalidSegmentation(file: path, reason: "frame \(index + 1) names no segment")
            }
            let source = data.item(.perFrameFunctionalGroupsSequence, index: index)?
                .item(.derivationImageSequence)?.item(.sourceImageSequence)
            let stored = try file.storedFrame(index)
            let mask = kind == .binary ? stored.map { $0 != 0 } : stored.map { Double($0) / maximum >= 0.5 }
            frames.append(
                Frame(
                    segmentNumber: number, referencedSOPInstanceUID: source?.string(.referencedSOPInstanceUID),
                    referencedFrameNumber: source?.int(.referencedFrameNumber),
                    position: file.imagePosition(frame: index), mask: mask))
        }
        self.frames = frames
        pixelSpacing = file.pixelSpacing
        normal = file.imageOrientation().map { o in
            [o[1] * o[5] - o[2] * o[4], o[2] * o[3] - o[0] * o[5], o[0] * o[4] - o[1] * o[3]]
        }
    }

    /// Where a SEG frame lies: its source instance and frame, else its position rounded to 0.01 mm.
    private static func key(uid: String?, frame: Int?, position: [Double]?) -> String {
        if let uid { return "\(uid)#\(frame ?? 1)" }
        return (position ?? []).map { String(format: "%.2f", $0) }.joined(separator: ",")
    }

    /// The label map on the SEG's own slices: one slice per distinct source frame (sorted along the normal when
    /// positions are known), label = segment number, later segments drawn over earlier ones where they overlap.
    /// Returns the labels [slices, rows, columns] and each slice's position (nil when unknown).
    public func labelVolume() -> (labels: [Int32], slices: Int, positions: [[Double]?]) {
        var order: [String] = []
        var positions: [String: [Double]?] = [:]
        for frame in frames {
            let key = Self.key(
                uid: frame.referencedSOPInstanceUID, frame: frame.referencedFrameNumber,
                position: frame.position)
            if positions[key] == nil {
                order.append(key)
                positions[key] = .some(frame.position)
            }
        }
        if let normal, order.allSatisfy({ positions[$0].flatMap { $0 } != nil }) {
            func location(_ key: String) -> Double {
                zip(positions[key].flatMap { $0 } ?? [], normal).map(*).reduce(0, +)
            }
            order.sort { location($0) < location($1) }
        }
        let index = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
        let plane = rows * columns
        var labels = [Int32](repeating: 0, count: order.count * plane)
        for frame in frames.sorted(by: { $0.segmentNumber < $1.segmentNumber }) {
            let key = Self.key(
                uid: frame.referencedSOPInstanceUID, frame: frame.referencedFrameNumber,
                position: frame.position)
            guard let slice = index[key] else { continue }
            for pixel in 0..<plane where frame.mask[pixel] {
                labels[slice * plane + pixel] = Int32(frame.segmentNumber)
            }
        }
        return (labels, order.count, order.map { positions[$0] ?? nil })
    }

    /// The label map aligned to a series' slices ([slices, rows, columns] of the series): each SEG frame lands
    /// on the slice whose SOP Instance UID (and frame) it references, else on the slice at its position.
    ///
    /// - Throws: `DICOMError.invalidSegmentation` when sizes differ or a frame matches no slice.
    public func labels(alignedTo series: Series) throws -> [Int32] {
        guard series.first.rows == rows, series.first.columns == columns else {
            throw DICOMError.invalidSegmentation(
                file: path,
                reason: "\(rows)×\(columns) frames, but the series is \(series.first.rows)×\(series.first.columns)")
        }
        var byReference: [String: Int] = [:]
        var byPosition: [String: Int] = [:]
        for (index, slice) in series.slices.enumerated() {
            if let uid = slice.file.dataset.string(.sopInstanceUID) {
                byReference[Self.key(uid: uid, frame: slice.frame + 1, position: nil)] = index
            }
            if let position = slice.file.imagePosition(frame: slice.frame) {
                byPosition[Self.key(uid: nil, frame: nil, position: position)] = index
            }
        }
        let plane = rows * columns
        var labels = [Int32](repeating: 0, count: series.slices.count * plane)
        for (number, frame) in frames.enumerated().sorted(by: { $0.element.segmentNumber < $1.element.segmentNumber }) {
            let reference = frame.referencedSOPInstanceUID.map {
                Self.key(uid: $0, frame: frame.referencedFrameNumber ?? 1, position: nil)
            }
            guard
                let slice = reference.flatMap({ byReference[$0] })
                    ?? frame.position.flatMap({ byPosition[Self.key(uid: nil, frame: nil, position: $0)] })
            else {
                throw DICOMError.invalidSegmentation(
                    file: path, reason: "frame \(number + 1) references no slice of series \(series.seriesInstanceUID)")
            }
            for pixel in 0..<plane where frame.mask[pixel] {
                labels[slice * plane + pixel] = Int32(frame.segmentNumber)
            }
        }
        return labels
    }
}
