/// A LUT with its descriptor (number of entries, first mapped value, bits per entry) and data, as in the Modality
/// and VOI LUT Sequences (PS3.3 C.11.1, C.11.2).
struct LookupTable: Sendable {
    let firstMapped: Int
    let bitsPerEntry: Int
    let entries: [Int]

    /// Reads LUT Descriptor and LUT Data from a sequence item.
    /// - Throws: `DICOMError.missingAttribute` when either is absent or inconsistent.
    init(item: DICOMItem, file: String) throws {
        guard let descriptor = item.doubles(.lutDescriptor), descriptor.count == 3,
            let data = item.words(.lutData)
        else {
            throw DICOMError.missingAttribute(file: file, attribute: "LUT Descriptor/LUT Data (0028,3002/3006)")
        }
        let count = descriptor[0] == 0 ? 65536 : Int(descriptor[0])
        var first = Int(descriptor[1])
        if first > 32767 { first -= 65536 }  // SS stored as US
        bitsPerEntry = Int(descriptor[2])
        firstMapped = first
        if data.count == count {
            entries = data.map { Int($0) }
        } else if bitsPerEntry == 8 && data.count * 2 >= count {
            entries = (0..<count).map { Int(data[$0 / 2] >> UInt16(8 * ($0 % 2)) & 0xFF) }
        } else {
            throw DICOMError.missingAttribute(
                file: file, attribute: "LUT Data with \(count) entries (it has \(data.count) words)")
        }
    }

    init(firstMapped: Int, bitsPerEntry: Int, entries: [Int]) {
        self.firstMapped = firstMapped
        self.bitsPerEntry = bitsPerEntry
        self.entries = entries
    }

    /// The entry for `value`: values below the first mapped use the first entry, above the range the last.
    func apply(_ value: Int) -> Int {
        let index = value < firstMapped ? 0 : min(value - firstMapped, entries.count - 1)
        return entries[index]
    }
}

/// The Palette Color Lookup Table Module (PS3.3 C.7.6.3.1.5–6, C.7.9): three LUTs, plain or segmented, 8 or 16
/// bits per entry.
struct Palette {
    let red: LookupTable
    let green: LookupTable
    let blue: LookupTable

    init(dataset: DICOMItem, file: String) throws {
        func table(_ descriptorTag: DICOMTag, _ dataTag: DICOMTag, _ segmentedTag: DICOMTag) throws -> LookupTable {
            guard let descriptor = dataset.doubles(descriptorTag), descriptor.count == 3 else {
                throw DICOMError.missingAttribute(file: file, attribute: "palette descriptor \(descriptorTag)")
            }
            let count = descriptor[0] == 0 ? 65536 : Int(descriptor[0])
            var first = Int(descriptor[1])
            if first > 32767 { first -= 65536 }
            let nominalBits = Int(descriptor[2])
            if let words = dataset.words(dataTag) {
                if words.count == count {
                    return LookupTable(firstMapped: first, bitsPerEntry: 16, entries: words.map { Int($0) })
                }
                if words.count * 2 == count || words.count * 2 == count + 1 {
                    let entries = (0..<count).map { Int(words[$0 / 2] >> UInt16(8 * ($0 % 2)) & 0xFF) }
                    return LookupTable(firstMapped: first, bitsPerEntry: 8, entries: entries)
                }
                throw DICOMError.missingAttribute(
                    file: file, attribute: "palette data \(dataTag) with \(count) entries (has \(words.count) words)")
            }
            guard let words = dataset.words(segmentedTag) else {
                throw DICOMError.missingAttribute(file: file, attribute: "palette data \(dataTag) or \(segmentedTag)")
            }
            let values: [Int] =
                nominalBits == 8
                ? words.flatMap { [Int($0 & 0xFF), Int($0 >> 8)] } : words.map { Int($0) }
            let entries = try Palette.expandSegmented(values, byteEntries: nominalBits == 8, file: file)
            return LookupTable(firstMapped: first, bitsPerEntry: nominalBits, entries: entries)
        }
        red = try table(.redPaletteDescriptor, .redPaletteData, .segmentedRedPaletteData)
        green = try table(.greenPaletteDescriptor, .greenPaletteData, .segmentedGreenPaletteData)
        blue = try table(.bluePaletteDescriptor, .bluePaletteData, .segmentedBluePaletteData)
    }

    /// Expands segmented LUT data (discrete, linear and indirect segments, PS3.3 C.7.9.2) as pydicom does.
    static func expandSegmented(
        _ data: [Int], byteEntries: Bool, file: String,
        segmentLimit: Int? = nil, lastValue: Int? = nil, depth: Int = 0
    ) throws -> [Int] {
        guard depth < 8 else {
            throw DICOMError.unsupportedImage(file: file, reason: "segmented palette nests indirect segments too deep")
        }
        var lut: [Int] = []
        var offset = 0
        var segments = 0
        while offset + 1 < data.count {
            let opcode = data[offset]
            let length = data[offset + 1]
            offset += 2
            switch opcode {
            case 0:
                guard offset + length <= data.count else { break }
                lut += data[offset..<(offset + length)]
                offset += length
            case 1:
                guard let start = lut.last ?? lastValue, offset < data.count else {
                    throw DICOMError.unsupportedImage(
                        file: file, reason: "segmented palette starts with a linear segment")
                }
                let end = data[offset]
                offset += 1
                if start == end || length == 0 {
                    lut += Array(repeating: end, count: length)
                } else {
                    let step = Double(end - start) / Double(length)
                    let first = Double(start) + step
                    for i in 0..<length {
                        // numpy.linspace(first, end, length), then numpy.around (half to even).
                        let value =
                            length == 1
                            ? Double(end)
                            : first + Double(i) * (Double(end) - first) / Double(length - 1)
                        lut.append(Int((i == length - 1 ? Double(end) : value).rounded(.toNearestOrEven)))
                    }
                }
            case 2:
                guard let last = lut.last else {
                    throw DICOMError.unsupportedImage(
                        file: file, reason: "segmented palette starts with an indirect segment")
                }
                let target: Int
                if byteEntries {
                    guard offset + 3 < data.count else { break }
                    let bytes = [data[offset + 3], data[offset + 2], data[offset + 1], data[offset]]
                    target = ((bytes[0] << 8 | bytes[1]) << 16) | (bytes[2] << 8 | bytes[3])
                    offset += 4
                } else {
                    guard offset + 1 < data.count else { break }
                    target = data[offset + 1] << 16 | data[offset]
                    offset += 2
                }
                guard target < data.count else { break }
                lut += try expandSegmented(
                    Array(data[target...]), byteEntries: byteEntries, file: file,
                    segmentLimit: length, lastValue: last, depth: depth + 1)
            default:
                throw DICOMError.unsupportedImage(file: file, reason: "segmented palette opcode \(opcode)")
            }
            segments += 1
            if let segmentLimit, segments == segmentLimit { return lut }
        }
        return lut
    }

    /// Looks every stored value up in the three tables.
    func apply(_ samples: [Int64], rows: Int, columns: Int) -> RGBFrame {
        var out = [UInt32](repeating: 0, count: samples.count * 3)
        for (i, value) in samples.enumerated() {
            let v = Int(value)
            out[3 * i] = UInt32(red.apply(v))
            out[3 * i + 1] = UInt32(green.apply(v))
            out[3 * i + 2] = UInt32(blue.apply(v))
        }
        return RGBFrame(rows: rows, columns: columns, bitsPerSample: red.bitsPerEntry > 8 ? 16 : 8, samples: out)
    }
}
