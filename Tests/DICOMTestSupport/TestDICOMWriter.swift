import DICOM
import Foundation

/// Writes small DICOM Part 10 files by hand (explicit VR little endian unless told otherwise) so tests can make
/// exactly the files they need: valid series, broken headers, truncated or oversized pixel data.
package struct TestDICOMWriter {
    package struct Element {
        package var tag: DICOMTag
        package var vr: String
        package var value: [UInt8]
        /// Written instead of the value's length (to claim more bytes than follow).
        package var claimedLength: UInt32?
    }

    package var transferSyntaxUID = "1.2.840.10008.1.2.1"
    package var elements: [Element] = []

    package init() {}

    // MARK: - Values

    package static func text(_ value: String, vr: String) -> [UInt8] {
        var bytes = Array(value.utf8)
        if bytes.count % 2 == 1 { bytes.append(vr == "UI" ? 0 : 0x20) }
        return bytes
    }

    package static func uint16(_ values: [UInt16]) -> [UInt8] { values.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }
    package static func uint32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> (8 * $0) & 0xFF) } }
    package static func decimals(_ values: [Double]) -> String {
        values.map { String(format: "%.6g", $0) }.joined(separator: "\\")
    }

    package mutating func set(_ tag: DICOMTag, _ vr: String, _ value: [UInt8], claimedLength: UInt32? = nil) {
        elements.removeAll { $0.tag == tag }
        elements.append(Element(tag: tag, vr: vr, value: value, claimedLength: claimedLength))
    }

    package mutating func set(_ tag: DICOMTag, _ vr: String, _ text: String) { set(tag, vr, Self.text(text, vr: vr)) }
    package mutating func set(_ tag: DICOMTag, us value: Int) { set(tag, "US", Self.uint16([UInt16(value)])) }
    package mutating func remove(_ tag: DICOMTag) { elements.removeAll { $0.tag == tag } }

    /// A sequence of items, each a list of elements (explicit lengths).
    package mutating func setSequence(_ tag: DICOMTag, items: [[Element]]) {
        var value: [UInt8] = []
        for item in items {
            let body = item.sorted { ($0.tag.group, $0.tag.element) < ($1.tag.group, $1.tag.element) }
                .flatMap { Self.encode($0) }
            value += Self.uint16([0xFFFE, 0xE000]) + Self.uint32(UInt32(body.count)) + body
        }
        set(tag, "SQ", value)
    }

    package static func element(_ tag: DICOMTag, _ vr: String, _ text: String) -> Element {
        Element(tag: tag, vr: vr, value: Self.text(text, vr: vr), claimedLength: nil)
    }

    package static func encode(_ element: Element, bigEndian: Bool = false) -> [UInt8] {
        func u16(_ v: UInt16) -> [UInt8] { bigEndian ? [UInt8(v >> 8), UInt8(v & 0xFF)] : uint16([v]) }
        func u32(_ v: UInt32) -> [UInt8] { bigEndian ? uint32(v).reversed() : uint32(v) }
        let length = element.claimedLength ?? UInt32(element.value.count)
        var bytes = u16(element.tag.group) + u16(element.tag.element) + Array(element.vr.utf8)
        if ["OB", "OW", "OF", "SQ", "UT", "UN"].contains(element.vr) {
            bytes += [0, 0] + u32(length)
        } else {
            bytes += u16(UInt16(length))
        }
        return bytes + element.value
    }

    // MARK: - Files

    /// A 16-bit signed CT slice: `rows × columns` stored values, position along z, rescale −1024 + 1 × value.
    package static func ctSlice(
        rows: Int = 4, columns: Int = 5, stored: [Int16], position: [Double],
        orientation: [Double] = [1, 0, 0, 0, 1, 0], spacing: [Double] = [0.7, 0.8],
        slope: Double = 1, intercept: Double = -1024, series: String = "1.2.3.4.5",
        instance: Int = 1
    ) -> TestDICOMWriter {
        var writer = TestDICOMWriter()
        writer.set(.sopClassUID, "UI", "1.2.840.10008.5.1.4.1.1.2")
        writer.set(.sopInstanceUID, "UI", "\(series).\(instance)")
        writer.set(.modality, "CS", "CT")
        writer.set(.patientName, "PN", "Test^Patient")
        writer.set(.seriesInstanceUID, "UI", series)
        writer.set(.studyInstanceUID, "UI", "1.2.3.100")
        writer.set(.patientID, "LO", "P1")
        writer.set(.frameOfReferenceUID, "UI", "1.2.3.200")
        writer.set(.instanceNumber, "IS", "\(instance)")
        writer.set(.imagePositionPatient, "DS", decimals(position))
        writer.set(.imageOrientationPatient, "DS", decimals(orientation))
        writer.set(.samplesPerPixel, us: 1)
        writer.set(.photometricInterpretation, "CS", "MONOCHROME2")
        writer.set(.rows, us: rows)
        writer.set(.columns, us: columns)
        writer.set(.pixelSpacing, "DS", decimals(spacing))
        writer.set(.bitsAllocated, us: 16)
        writer.set(.bitsStored, us: 16)
        writer.set(.highBit, us: 15)
        writer.set(.pixelRepresentation, us: 1)
        writer.set(.rescaleIntercept, "DS", decimals([intercept]))
        writer.set(.rescaleSlope, "DS", decimals([slope]))
        writer.set(.pixelData, "OW", uint16(stored.map { UInt16(bitPattern: $0) }))
        return writer
    }

    /// The file's bytes: preamble, meta information, then the dataset in tag order.
    package func bytes() -> [UInt8] {
        var meta: [UInt8] = []
        meta += Self.encode(Element(tag: DICOMTag(0x0002, 0x0001), vr: "OB", value: [0, 1], claimedLength: nil))
        meta += Self.encode(Self.element(DICOMTag(0x0002, 0x0002), "UI", "1.2.840.10008.5.1.4.1.1.2"))
        meta += Self.encode(Self.element(DICOMTag(0x0002, 0x0003), "UI", "1.2.3.4"))
        meta += Self.encode(Self.element(.transferSyntaxUID, "UI", transferSyntaxUID))
        let groupLength = Self.encode(
            Element(
                tag: DICOMTag(0x0002, 0x0000), vr: "UL",
                value: Self.uint32(UInt32(meta.count)), claimedLength: nil))
        let bigEndian = transferSyntaxUID == "1.2.840.10008.1.2.2"
        let body = elements.sorted { ($0.tag.group, $0.tag.element) < ($1.tag.group, $1.tag.element) }
            .flatMap { Self.encode($0, bigEndian: bigEndian) }
        return [UInt8](repeating: 0, count: 128) + Array("DICM".utf8) + groupLength + meta + body
    }

    @discardableResult
    package func write(to url: URL) throws -> String {
        try Data(bytes()).write(to: url)
        return url.path
    }
}
