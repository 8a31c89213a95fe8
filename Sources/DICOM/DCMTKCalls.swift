import CDCMTK
import Foundation
import SliceLabSupport

/// Owns one `cdcmtk_file` and frees it in `deinit`. Every raw CDCMTK call of the package sits in this file.
// @unchecked Sendable: DCMTK's objects are not thread-safe; every call on `pointer` goes through `locked`, which
// holds the handle's recursive lock, and the pointer is freed in `deinit` once no caller holds the handle.
final class DCMTKHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let path: String
    /// DCMTK loads deferred values on first access, so even reads change the dataset: one caller at a time.
    private let lock = NSRecursiveLock()

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Opens `path`; element values above `maxReadLength` bytes stay on disk until read.
    init(path: String, maxReadLength: UInt32) throws {
        var message = [CChar](repeating: 0, count: 1024)
        guard let pointer = cdcmtk_open(path, maxReadLength, &message, message.count) else {
            let reason = String(nulTerminated: message)
            if !Self.hasPreamble(path) {
                throw DICOMError.unreadable(
                    file: path,
                    reason: "not a DICOM file (no 'DICM' preamble, and DCMTK "
                        + "could not parse it as a bare dataset: \(reason))")
            }
            throw DICOMError.unreadable(file: path, reason: reason + " (truncated or corrupt)")
        }
        self.pointer = pointer
        self.path = path
    }

    deinit { cdcmtk_close(pointer) }

    /// Whether the file starts with the 128-byte preamble and "DICM" (PS3.10 7.1).
    static func hasPreamble(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = handle.readData(ofLength: 132)
        return head.count == 132 && head.suffix(4).elementsEqual("DICM".utf8)
    }

    var lastError: String { String(cString: cdcmtk_last_error(pointer)) }
    var dataset: OpaquePointer? { cdcmtk_dataset(pointer) }
    var meta: OpaquePointer? { cdcmtk_meta(pointer) }

    /// Rests on `cdcmtk_transfer_syntax`.
    var transferSyntaxUID: String {
        locked {
            var buffer = [CChar](repeating: 0, count: 128)
            guard cdcmtk_transfer_syntax(pointer, &buffer, buffer.count) == Int32(CDCMTK_OK) else { return "" }
            return String(nulTerminated: buffer)
        }
    }

    /// Rests on `cdcmtk_has`.
    func has(_ tag: DICOMTag, in item: OpaquePointer?) -> Bool {
        locked { cdcmtk_has(item, tag.group, tag.element) != 0 }
    }

    /// Rests on `cdcmtk_value_count`.
    func valueCount(_ tag: DICOMTag, in item: OpaquePointer?) -> Int {
        locked {
            var count: UInt = 0
            guard cdcmtk_value_count(pointer, item, tag.group, tag.element, &count) == Int32(CDCMTK_OK) else {
                return 0
            }
            return Int(count)
        }
    }

    /// The value at `index` (or all values joined by "\" when `index` is nil); nil when absent.
    /// Rests on `cdcmtk_get_string`.
    func string(_ tag: DICOMTag, index: Int?, in item: OpaquePointer?) -> String? {
        locked {
            var needed = 0
            var buffer = [CChar](repeating: 0, count: 256)
            let position = index.map { $0 } ?? -1
            var status = cdcmtk_get_string(
                pointer, item, tag.group, tag.element, position, &buffer, buffer.count, &needed)
            if status == Int32(CDCMTK_BUFFER_TOO_SMALL) {
                buffer = [CChar](repeating: 0, count: needed)
                status = cdcmtk_get_string(
                    pointer, item, tag.group, tag.element, position, &buffer, buffer.count, &needed)
            }
            guard status == Int32(CDCMTK_OK) else { return nil }
            return String(nulTerminated: buffer)
        }
    }

    /// All 16-bit words of an element; nil when absent. Rests on `cdcmtk_get_uint16s`.
    func words(_ tag: DICOMTag, in item: OpaquePointer?) -> [UInt16]? {
        locked {
            var count = 0
            var status = cdcmtk_get_uint16s(pointer, item, tag.group, tag.element, nil, 0, &count)
            if status == Int32(CDCMTK_OK) { return [] }
            guard status == Int32(CDCMTK_BUFFER_TOO_SMALL) else { return nil }
            var words = [UInt16](repeating: 0, count: count)
            status = cdcmtk_get_uint16s(pointer, item, tag.group, tag.element, &words, words.count, &count)
            return status == Int32(CDCMTK_OK) ? words : nil
        }
    }

    /// Item `index` of a sequence; nil when absent. Rests on `cdcmtk_sequence_item`.
    func sequenceItem(_ tag: DICOMTag, index: Int, in item: OpaquePointer?) -> OpaquePointer? {
        locked {
            var result: OpaquePointer?
            guard cdcmtk_sequence_item(pointer, item, tag.group, tag.element, UInt(index), &result) == Int32(CDCMTK_OK)
            else { return nil }
            return result
        }
    }

    /// Rests on `cdcmtk_dump`.
    func dump() -> String {
        locked {
            var needed = 0
            _ = cdcmtk_dump(pointer, nil, 0, &needed)
            var buffer = [CChar](repeating: 0, count: max(needed, 1))
            guard cdcmtk_dump(pointer, &buffer, buffer.count, &needed) == Int32(CDCMTK_OK) else { return "" }
            return String(nulTerminated: buffer)
        }
    }

    // MARK: - Pixel Data

    struct PixelInfo {
        var encapsulated: Bool
        var length: Int
        var fragmentCount: Int
    }

    /// Nil when there is no Pixel Data. Rests on `cdcmtk_pixel_info`.
    func pixelInfo() throws -> PixelInfo? {
        try locked {
            var encapsulated: Int32 = 0
            var length: UInt64 = 0
            var fragments: UInt = 0
            let status = cdcmtk_pixel_info(pointer, &encapsulated, &length, &fragments)
            if status == Int32(CDCMTK_NOT_FOUND) { return nil }
            guard status == Int32(CDCMTK_OK) else { throw DICOMError.unreadable(file: path, reason: lastError) }
            return PixelInfo(encapsulated: encapsulated != 0, length: Int(length), fragmentCount: Int(fragments))
        }
    }

    /// Native Pixel Data bytes `offset..<offset+count`, 16-bit words little endian. Rests on `cdcmtk_read_pixels`.
    func readPixels(offset: Int, count: Int, into buffer: UnsafeMutableRawPointer) throws {
        try locked {
            guard count <= Int(UInt32.max) else {
                throw DICOMError.impossibleDimensions(file: path, reason: "a frame larger than 4 GB")
            }
            guard cdcmtk_read_pixels(pointer, UInt64(offset), UInt32(count), buffer) == Int32(CDCMTK_OK) else {
                throw DICOMError.unreadable(file: path, reason: lastError)
            }
        }
    }

    /// Encapsulated fragment `index` (0 is the first after the offset table). Rests on `cdcmtk_fragment`.
    func fragment(_ index: Int) throws -> [UInt8] {
        try locked {
            var length: UInt32 = 0
            guard cdcmtk_fragment_length(pointer, UInt(index), &length) == Int32(CDCMTK_OK) else {
                throw DICOMError.unreadable(file: path, reason: lastError)
            }
            var bytes = [UInt8](repeating: 0, count: Int(length))
            let status = bytes.withUnsafeMutableBytes { cdcmtk_fragment(pointer, UInt(index), $0.baseAddress, length) }
            guard status == Int32(CDCMTK_OK) else { throw DICOMError.unreadable(file: path, reason: lastError) }
            return bytes
        }
    }

    /// The basic offset table (empty when absent). Rests on `cdcmtk_offset_table`.
    func offsetTable() throws -> [UInt32] {
        try locked {
            var count = 0
            var status = cdcmtk_offset_table(pointer, nil, 0, &count)
            if status == Int32(CDCMTK_OK) { return [] }
            guard status == Int32(CDCMTK_BUFFER_TOO_SMALL) else {
                throw DICOMError.unreadable(file: path, reason: lastError)
            }
            var offsets = [UInt32](repeating: 0, count: count)
            status = cdcmtk_offset_table(pointer, &offsets, offsets.count, &count)
            guard status == Int32(CDCMTK_OK) else { throw DICOMError.unreadable(file: path, reason: lastError) }
            return offsets
        }
    }

    /// Fragment lengths, used to map frames to fragments. Rests on `cdcmtk_fragment_length`.
    func fragmentLength(_ index: Int) throws -> Int {
        try locked {
            var length: UInt32 = 0
            guard cdcmtk_fragment_length(pointer, UInt(index), &length) == Int32(CDCMTK_OK) else {
                throw DICOMError.unreadable(file: path, reason: lastError)
            }
            return Int(length)
        }
    }

    /// Decodes one RLE/JPEG/JPEG-LS frame with DCMTK's codecs into `buffer`; returns the decoded colour model.
    /// Rests on `cdcmtk_decode_frame` (DcmPixelData::getUncompressedFrame).
    func decodeFrame(_ frame: Int, into buffer: UnsafeMutableRawBufferPointer) throws -> String {
        try locked {
            var model = [CChar](repeating: 0, count: 64)
            let status = cdcmtk_decode_frame(
                pointer, UInt32(frame), buffer.baseAddress, UInt32(buffer.count),
                &model, model.count)
            guard status == Int32(CDCMTK_OK) else {
                throw DICOMError.decodeFailed(file: path, frame: frame, reason: lastError)
            }
            return String(nulTerminated: model)
        }
    }
}

/// Owns one `cdcmtk_seg` (a binary DICOM SEG being built with DCMTK's dcmseg) and frees it in `deinit`.
final class DCMTKSegmentationHandle {
    let pointer: OpaquePointer
    let destination: String

    /// Rests on `cdcmtk_seg_create` (DcmSegmentation::createBinarySegmentation, importFromSourceImage).
    init(
        source: String, rows: Int, columns: Int, seriesDescription: String, seriesNumber: Int,
        destination: String
    ) throws {
        var message = [CChar](repeating: 0, count: 1024)
        guard rows > 0, rows <= Int(UInt16.max), columns > 0, columns <= Int(UInt16.max),
            let pointer = cdcmtk_seg_create(
                source, UInt16(rows), UInt16(columns), seriesDescription,
                Int32(clamping: seriesNumber), &message, message.count)
        else {
            throw DICOMError.unwritable(file: destination, reason: String(nulTerminated: message))
        }
        self.pointer = pointer
        self.destination = destination
    }

    deinit { cdcmtk_seg_free(pointer) }

    private func check(_ status: Int32) throws {
        guard status == Int32(CDCMTK_OK) else {
            throw DICOMError.unwritable(file: destination, reason: String(cString: cdcmtk_seg_error(pointer)))
        }
    }

    /// Rests on `cdcmtk_seg_add_segment` (DcmSegment::create, DcmSegmentation::addSegment).
    func addSegment(label: String, coding: SegmentCoding) throws -> Int {
        var number: UInt16 = 0
        func strings(_ code: CodedConcept) -> [String] { [code.value, code.scheme, code.meaning] }
        try withCStrings(strings(coding.category)) { category in
            try withCStrings(strings(coding.type)) { type in
                if let region = coding.region {
                    try withCStrings(strings(region)) { region in
                        try check(cdcmtk_seg_add_segment(pointer, label, category, type, region, &number))
                    }
                } else {
                    try check(cdcmtk_seg_add_segment(pointer, label, category, type, nil, &number))
                }
            }
        }
        return Int(number)
    }

    /// Rests on `cdcmtk_seg_set_geometry` (FGPlaneOrientationPatient, FGPixelMeasures).
    func setGeometry(orientation: [Double], rowSpacing: Double, columnSpacing: Double, thickness: Double) throws {
        try check(cdcmtk_seg_set_geometry(pointer, orientation, rowSpacing, columnSpacing, thickness))
    }

    /// Rests on `cdcmtk_seg_add_frame` (DcmSegmentation::addFrame with plane position, frame content and
    /// derivation image groups).
    func addFrame(
        _ mask: [UInt8], segment: Int, position: [Double], sourceClassUID: String,
        sourceInstanceUID: String, sourceFrame: Int, sourcePath: String, stackPosition: Int
    ) throws {
        try check(
            cdcmtk_seg_add_frame(
                pointer, mask, UInt16(segment), position, sourceClassUID, sourceInstanceUID,
                UInt32(sourceFrame), sourcePath, UInt32(stackPosition)))
    }

    /// Rests on `cdcmtk_seg_save` (DcmSegmentation::saveFile).
    func save(to path: String) throws { try check(cdcmtk_seg_save(pointer, path)) }

    /// Rests on `cdcmtk_seg_set_uids`.
    func setUIDs(series: String, instance: String) throws { try check(cdcmtk_seg_set_uids(pointer, series, instance)) }
}

/// `body` with `strings` as an array of C strings, valid for its duration.
private func withCStrings<T>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) throws -> T) rethrows -> T {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return try body(copies.map { UnsafePointer($0) })
}
