import CDCMTK

/// A dataset or a sequence item of an open `DICOMFile`: typed getters for its attributes. Keeps its file open.
// @unchecked Sendable: it holds the `DCMTKHandle` of its file (whose every DCMTK call is serialised by the
// handle's lock) and an opaque item pointer that only that handle's calls dereference.
public struct DICOMItem: @unchecked Sendable {
    let handle: DCMTKHandle
    let pointer: OpaquePointer?

    /// Whether the attribute is present (directly in this item). Rests on `cdcmtk_has`.
    public func contains(_ tag: DICOMTag) -> Bool { handle.has(tag, in: pointer) }

    /// The value multiplicity, or the number of items of a sequence; 0 when absent or empty.
    /// Rests on `cdcmtk_value_count`.
    public func valueCount(_ tag: DICOMTag) -> Int { handle.valueCount(tag, in: pointer) }

    /// The whole value as text (multiple values joined by "\"), trailing padding removed; nil when absent.
    /// Rests on `cdcmtk_get_string`.
    public func string(_ tag: DICOMTag) -> String? {
        handle.string(tag, index: nil, in: pointer).map(trimmed)
    }

    /// Every value as text, in order; empty when absent. Rests on `cdcmtk_get_string`.
    public func strings(_ tag: DICOMTag) -> [String] {
        guard let whole = handle.string(tag, index: nil, in: pointer), !whole.isEmpty else { return [] }
        if valueCount(tag) <= 1 && !whole.contains("\\") { return [trimmed(whole)] }
        return (0..<max(valueCount(tag), 1)).compactMap { handle.string(tag, index: $0, in: pointer).map(trimmed) }
    }

    /// The value at `index` as a number (DS, IS, US, SS, UL, SL, FL, FD); nil when absent or not numeric.
    /// Rests on `cdcmtk_get_string`.
    public func double(_ tag: DICOMTag, index: Int = 0) -> Double? {
        guard let text = handle.string(tag, index: index, in: pointer) else { return nil }
        return Double(trimmed(text))
    }

    /// Every value as a number; nil when absent or when any value is not numeric.
    public func doubles(_ tag: DICOMTag) -> [Double]? {
        let texts = strings(tag)
        guard !texts.isEmpty else { return nil }
        var values: [Double] = []
        for text in texts {
            guard let value = Double(text) else { return nil }
            values.append(value)
        }
        return values
    }

    /// The value at `index` as an integer, if it is a whole number.
    public func int(_ tag: DICOMTag, index: Int = 0) -> Int? {
        guard let value = double(tag, index: index), value.isFinite, value == value.rounded(),
            abs(value) < 9.0e15
        else { return nil }
        return Int(value)
    }

    /// 16-bit words (US, SS, OW: LUT data); nil when absent. Rests on `cdcmtk_get_uint16s`.
    public func words(_ tag: DICOMTag) -> [UInt16]? { handle.words(tag, in: pointer) }

    /// The items of a sequence, in order; empty when absent. Rests on `cdcmtk_sequence_item`.
    public func items(_ tag: DICOMTag) -> [DICOMItem] {
        let count = valueCount(tag)
        return (0..<count).compactMap { index in
            handle.sequenceItem(tag, index: index, in: pointer).map { DICOMItem(handle: handle, pointer: $0) }
        }
    }

    /// The first item of a sequence, if any.
    public func item(_ tag: DICOMTag, index: Int = 0) -> DICOMItem? {
        handle.sequenceItem(tag, index: index, in: pointer).map { DICOMItem(handle: handle, pointer: $0) }
    }

    private func trimmed(_ text: String) -> String {
        var scalars = Substring(text)
        while let last = scalars.last, last == " " || last == "\0" { scalars.removeLast() }
        while let first = scalars.first, first == " " { scalars.removeFirst() }
        return String(scalars)
    }
}
