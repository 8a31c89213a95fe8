import Foundation
import SliceLabSupport

/// A NRRD header (teem's "Nearly Raw Raster Data", NRRD0001–NRRD0005) as ITK and 3D Slicer write it: an attached
/// header (`.nrrd`, the data after the first blank line) or a detached one (`.nhdr` naming its `data file`).
///
/// Read: the scalar types int8 … float64, encodings raw, gzip and ascii, either endianness, `byte skip` and
/// `line skip`, per-axis `kinds`, and the geometry of `space` (or `space dimension`), `space directions` and
/// `space origin` (old-style `spacings` without them). Refused with the reason: bzip2 and hex encodings, `block`
/// data, multi-file data (`data file: LIST` or a pattern), more than three domain axes.
public struct NRRDHeader: Sendable {
    /// The scalar types, by their size and kind.
    public enum ScalarType: String, Sendable, CaseIterable {
        case int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64

        public var size: Int {
            switch self {
            case .int8, .uint8: return 1
            case .int16, .uint16: return 2
            case .int32, .uint32, .float32: return 4
            case .int64, .uint64, .float64: return 8
            }
        }

        /// The name a writer puts in `type:`.
        var nrrdName: String {
            switch self {
            case .int8: return "signed char"
            case .uint8: return "unsigned char"
            case .int16: return "short"
            case .uint16: return "unsigned short"
            case .int32: return "int"
            case .uint32: return "unsigned int"
            case .int64: return "long long int"
            case .uint64: return "unsigned long long int"
            case .float32: return "float"
            case .float64: return "double"
            }
        }

        /// Every spelling of the NRRD specification.
        static func parse(_ text: String) -> ScalarType? {
            switch text {
            case "signed char", "int8", "int8_t": return .int8
            case "uchar", "unsigned char", "uint8", "uint8_t": return .uint8
            case "short", "short int", "signed short", "signed short int", "int16", "int16_t": return .int16
            case "ushort", "unsigned short", "unsigned short int", "uint16", "uint16_t": return .uint16
            case "int", "signed int", "int32", "int32_t": return .int32
            case "uint", "unsigned int", "uint32", "uint32_t": return .uint32
            case "longlong", "long long", "long long int", "signed long long", "signed long long int", "int64",
                "int64_t":
                return .int64
            case "ulonglong", "unsigned long long", "unsigned long long int", "uint64", "uint64_t": return .uint64
            case "float": return .float32
            case "double": return .float64
            default: return nil
            }
        }
    }

    public enum Encoding: String, Sendable { case raw, gzip, ascii }

    public let path: String
    public let type: ScalarType
    /// Axis lengths, fastest first (x, y, z for a volume; a leading list axis for Slicer's layers).
    public let sizes: [Int]
    /// Per axis, lower case (`domain`, `space`, `list`, `vector`, …); `domain` for every axis when absent.
    public let kinds: [String]
    public let encoding: Encoding
    public let bigEndian: Bool
    /// The indices of the spatial axes, in order (at most three).
    public let domainAxes: [Int]
    /// Where the voxels lie, in LPS (the contract's frame; RAS and LAS spaces are converted), spacing z, y, x.
    public let geometry: VolumeGeometry
    /// The `key:=value` pairs in file order, unescaped.
    public let keyValues: [(key: String, value: String)]
    /// The file holding the data and where in it (after `line skip` lines) the data starts; a negative
    /// `byteSkip` (−1) puts the raw data at the end of the file.
    let dataPath: String
    let dataOffset: Int
    let lineSkip: Int
    let byteSkip: Int

    /// The value of `key:=value`, if present.
    public func value(_ key: String) -> String? { keyValues.first { $0.key == key }?.value }

    /// Whether `head` starts a NRRD header.
    public static func recognizes(_ head: [UInt8]) -> Bool {
        head.count >= 8 && Array(head[0..<7]) == Array("NRRD000".utf8)
            && (UInt8(ascii: "1")...UInt8(ascii: "5"))
                .contains(head[7])
    }

    /// Reads and checks the header at `path`.
    ///
    /// - Throws: `ImageFileError.unreadable` naming the file and the field at fault, `.tooLarge` for data beyond
    ///   `limits`.
    public static func read(_ path: String, limits: ReadLimits = .standard) throws -> NRRDHeader {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ImageFileError.unreadable(file: path, reason: "cannot open it for reading")
        }
        defer { try? handle.close() }
        // A header is text; 1 MiB is far beyond any real one (Slicer's with hundreds of segments is ~100 KiB).
        let head = [UInt8]((try? handle.read(upToCount: 1 << 20)) ?? Data())
        guard recognizes(head) else {
            throw ImageFileError.unreadable(file: path, reason: "not a NRRD file (it does not start with NRRD000N)")
        }
        var lines: [String] = []
        var offset = 0
        var ended = false
        while offset < head.count {
            guard let newline = head[offset...].firstIndex(of: 0x0A) else { break }
            var line = head[offset..<newline]
            if line.last == 0x0D { line = line.dropLast() }
            offset = newline + 1
            if line.isEmpty {
                ended = true
                break
            }
            guard let text = String(bytes: line, encoding: .utf8) else {
                throw ImageFileError.unreadable(file: path, reason: "header line \(lines.count + 1) is not text")
            }
            lines.append(text)
        }
        var fields: [String: String] = [:]
        var keyValues: [(key: String, value: String)] = []
        for line in lines.dropFirst() where !line.hasPrefix("#") {
            if let range = line.range(of: ":=") {
                keyValues.append(
                    (unescape(String(line[..<range.lowerBound])), unescape(String(line[range.upperBound...]))))
            } else if let range = line.range(of: ": ") {
                fields[line[..<range.lowerBound].lowercased()] = String(line[range.upperBound...])
                    .trimmingCharacters(in: .whitespaces)
            } else {
                throw ImageFileError.unreadable(file: path, reason: "header line '\(line.prefix(80))' is no field")
            }
        }
        func field(_ names: String...) -> String? { names.lazy.compactMap { fields[$0] }.first }
        func fail(_ reason: String) -> ImageFileError { .unreadable(file: path, reason: reason) }

        guard let typeText = field("type"), let type = ScalarType.parse(typeText.lowercased()) else {
            throw fail("type '\(field("type") ?? "")' is not a scalar type SliceLab reads (int8 … float64)")
        }
        guard let dimension = field("dimension").flatMap({ Int($0) }), (1...16).contains(dimension) else {
            throw fail("dimension '\(field("dimension") ?? "")' is not 1…16")
        }
        let sizes = (field("sizes") ?? "").split(separator: " ").compactMap { Int($0) }
        guard sizes.count == dimension, sizes.allSatisfy({ $0 > 0 }) else {
            throw fail("sizes '\(field("sizes") ?? "")' are not \(dimension) positive integers")
        }
        let kinds =
            field("kinds").map { $0.split(separator: " ").map { $0.lowercased() } }
            ?? Array(repeating: "domain", count: dimension)
        guard kinds.count == dimension else { throw fail("kinds has \(kinds.count) entries for \(dimension) axes") }
        let encodingText = (field("encoding") ?? "").lowercased()
        let encoding: Encoding
        switch encodingText {
        case "raw": encoding = .raw
        case "gzip", "gz": encoding = .gzip
        case "ascii", "text", "txt": encoding = .ascii
        case "bzip2", "bz2", "hex":
            throw fail("encoding \(encodingText) is not read (raw, gzip and ascii are)")
        default: throw fail("encoding '\(encodingText)' is not a NRRD encoding")
        }
        let endian = (field("endian") ?? "little").lowercased()
        guard endian == "little" || endian == "big" else { throw fail("endian '\(endian)' is neither little nor big") }

        // The spatial axes and their vectors.
        let directionsText = field("space directions")
        var vectors: [[Double]?] = []
        if let directionsText {
            vectors = try parseVectors(directionsText, count: dimension, path: path)
        }
        let spatial = ["domain", "space", "time"]
        let domainAxes = (0..<dimension).filter { axis in
            if !vectors.isEmpty { return vectors[axis] != nil }
            return spatial.contains(kinds[axis])
        }
        guard domainAxes.count <= 3 else {
            throw fail("\(domainAxes.count) domain axes; SliceLab reads images of at most three")
        }
        let space = (field("space") ?? "").lowercased()
        let spaceDimension = field("space dimension").flatMap { Int($0) } ?? (space.isEmpty ? 0 : 3)
        var flip: [Double] = [1, 1, 1]
        switch space {
        case "right-anterior-superior", "ras": flip = [-1, -1, 1]
        case "left-anterior-superior", "las": flip = [1, -1, 1]
        case "", "left-posterior-superior", "lps", "scanner-xyz", "3d-right-handed", "3d-left-handed": break
        default: throw fail("space '\(space)' is not a 3-D patient space SliceLab maps to LPS")
        }
        var columns: [[Double]] = domainAxes.map { axis in
            guard let vector = vectors.isEmpty ? nil : vectors[axis] else {
                let spacing =
                    (field("spacings") ?? "").split(separator: " ").map(String.init)[safe: axis].flatMap(Double.init)
                var unit = [0.0, 0.0, 0.0]
                unit[min(2, domainAxes.firstIndex(of: axis)!)] = spacing.map { $0.isFinite ? $0 : 1 } ?? 1
                return unit
            }
            return (0..<3).map { (vector[safe: $0] ?? 0) * flip[$0] }
        }
        guard
            spaceDimension == 0 || vectors.isEmpty
                || vectors.compactMap({ $0 }).allSatisfy({ $0.count == spaceDimension })
        else {
            throw fail("space directions do not have \(spaceDimension) components")
        }
        while columns.count < 3 {  // a 2-D image: one slice, its normal the right-handed third axis
            let (a, b) = (columns[safe: 0] ?? [1, 0, 0], columns[safe: 1] ?? [0, 1, 0])
            let normal = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
            let length = (normal.map { $0 * $0 }.reduce(0, +)).squareRoot()
            columns.append(length > 0 ? normal.map { $0 / length } : [0, 0, 1])
        }
        let spacing = columns.map { ($0.map { $0 * $0 }.reduce(0, +)).squareRoot() }
        guard spacing.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw fail("space directions '\(directionsText ?? "")' have a zero or non-finite vector")
        }
        var direction = [Double](repeating: 0, count: 9)
        for (c, column) in columns.enumerated() { for r in 0..<3 { direction[r * 3 + c] = column[r] / spacing[c] } }
        var origin = [0.0, 0.0, 0.0]
        if let originText = field("space origin") {
            let parsed = try parseVectors(originText, count: 1, path: path)
            guard let vector = parsed[0], vector.count >= 2 else {
                throw fail("space origin '\(originText)' is no vector")
            }
            origin = (0..<3).map { (vector[safe: $0] ?? 0) * flip[$0] }
        }
        let geometry = VolumeGeometry(spacing: spacing.reversed(), origin: origin, direction: direction)

        // Where the data is.
        var dataPath = path
        var dataOffset = offset
        if let file = field("data file", "datafile") {
            guard !file.hasPrefix("LIST"), file.split(separator: " ").count == 1 else {
                throw fail("data file '\(file)': data split over several files is not read")
            }
            dataPath =
                file.hasPrefix("/")
                ? file : URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(file).path
            dataOffset = 0
        } else if !ended {
            throw fail("the header has no blank line before its data and names no data file")
        }
        let lineSkip = field("line skip", "lineskip").flatMap { Int($0) } ?? 0
        let byteSkip = field("byte skip", "byteskip").flatMap { Int($0) } ?? 0
        guard lineSkip >= 0, byteSkip >= -1 else {
            throw fail("line skip \(lineSkip) or byte skip \(byteSkip) is negative")
        }
        try limits.checkFile(sizes, bytesPerValue: max(type.size, 4), file: path, what: "NRRD data")
        return NRRDHeader(
            path: path, type: type, sizes: sizes, kinds: kinds, encoding: encoding, bigEndian: endian == "big",
            domainAxes: domainAxes, geometry: geometry, keyValues: keyValues, dataPath: dataPath,
            dataOffset: dataOffset, lineSkip: lineSkip, byteSkip: byteSkip)
    }

    /// `(a,b,c) (d,e,f) none …`: `count` vectors or `none`s.
    static func parseVectors(_ text: String, count: Int, path: String) throws -> [[Double]?] {
        var vectors: [[Double]?] = []
        var rest = Substring(text)
        while let first = rest.firstIndex(where: { !$0.isWhitespace }) {
            rest = rest[first...]
            if rest.hasPrefix("none") {
                vectors.append(nil)
                rest = rest.dropFirst(4)
            } else if rest.hasPrefix("("), let close = rest.firstIndex(of: ")") {
                let numbers = rest[rest.index(after: rest.startIndex)..<close].split(separator: ",").map {
                    Double($0.trimmingCharacters(in: .whitespaces))
                }
                guard numbers.allSatisfy({ $0?.isFinite == true }) else {
                    throw ImageFileError.unreadable(file: path, reason: "'\(text)' holds a non-number")
                }
                vectors.append(numbers.map { $0! })
                rest = rest[rest.index(after: close)...]
            } else {
                throw ImageFileError.unreadable(file: path, reason: "'\(text)' is not a list of (x,y,z) vectors")
            }
        }
        guard vectors.count == count else {
            throw ImageFileError.unreadable(file: path, reason: "'\(text)' has \(vectors.count) entries, not \(count)")
        }
        return vectors
    }

    /// NRRD's key/value escapes: `\n` and `\\`.
    static func unescape(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        var result = ""
        var escaped = false
        for character in text {
            if escaped {
                result.append(character == "n" ? "\n" : character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return result
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }
}

/// A NRRD image: its header and its values as Float (file order, fastest axis first).
public struct NRRDImage: Sendable {
    public let header: NRRDHeader
    public let values: [Float]

    public var path: String { header.path }
    public var geometry: VolumeGeometry { header.geometry }

    /// Reads the header and the data.
    ///
    /// - Throws: `ImageFileError.unreadable` for a bad header, missing, short or corrupt data, or an ascii value
    ///   that is no number; `.tooLarge` beyond `limits`.
    public static func read(_ path: String, limits: ReadLimits = .standard) throws -> NRRDImage {
        let header = try NRRDHeader.read(path, limits: limits)
        let count = header.sizes.reduce(1, *)
        let bytes = count * header.type.size
        func fail(_ reason: String) -> ImageFileError { .unreadable(file: header.dataPath, reason: reason) }
        // A detached header may name any path: only a regular file is read, and no more of it than the data can
        // take (raw: the voxels; compressed or text: the read limit).
        let attributes = try? FileManager.default.attributesOfItem(atPath: header.dataPath)
        guard attributes?[.type] as? FileAttributeType == .typeRegular,
            let size = (attributes?[.size] as? NSNumber)?.intValue
        else {
            throw fail("the data file is missing or not a regular file")
        }
        guard size <= limits.maxBytes || header.encoding == .raw else {
            throw ImageFileError.tooLarge(
                file: header.dataPath, reason: "\(size) bytes of \(header.encoding.rawValue) data exceed \(limits)")
        }
        guard let handle = FileHandle(forReadingAtPath: header.dataPath) else {
            throw fail("the data file cannot be read")
        }
        defer { try? handle.close() }
        if header.encoding == .raw && header.byteSkip == -1 {  // the data ends the file
            guard size - header.dataOffset >= bytes else {
                throw fail("\(max(0, size - header.dataOffset)) data bytes for \(bytes) (\(count) voxels)")
            }
            try? handle.seek(toOffset: UInt64(size - bytes))
            let tail = (try? handle.read(upToCount: bytes)) ?? Data()
            guard tail.count == bytes else { throw fail("the data file ended early") }
            return NRRDImage(header: header, values: decode(tail, from: 0, count: count, header: header))
        }
        // Raw data needs its header lines (line skip), its byte skip and its voxels, nothing after them.
        let wanted = header.encoding == .raw ? min(size, header.dataOffset + (1 << 20) + header.byteSkip + bytes) : size
        let file = (try? handle.read(upToCount: wanted)) ?? Data()
        var start = header.dataOffset
        for _ in 0..<header.lineSkip {
            guard let newline = file[start...].firstIndex(of: 0x0A) else { throw fail("fewer lines than line skip") }
            start = newline + 1
        }
        switch header.encoding {
        case .ascii:
            guard let text = String(data: file[start...], encoding: .utf8) else { throw fail("ascii data is not text") }
            let tokens = text.split(whereSeparator: { $0.isWhitespace || $0 == "," })
            guard tokens.count >= count else { throw fail("\(tokens.count) ascii values for \(count) voxels") }
            let values = try tokens.prefix(count).map { token -> Float in
                guard let value = Double(token) else { throw fail("ascii value '\(token.prefix(20))' is no number") }
                return Float(value)
            }
            return NRRDImage(header: header, values: values)
        case .raw:
            let skip = header.byteSkip
            guard file.count - start - skip >= bytes else {
                throw fail("\(max(0, file.count - start - max(0, skip))) data bytes for \(bytes) (\(count) voxels)")
            }
            return NRRDImage(header: header, values: decode(file, from: start + skip, count: count, header: header))
        case .gzip:
            guard header.byteSkip >= 0 else { throw fail("byte skip -1 applies to raw data only") }
            var inflated = Data(count: bytes + header.byteSkip)
            let outcome = file[start...].withUnsafeBytes { compressed in
                inflated.withUnsafeMutableBytes { Gzip.inflate(compressed, into: $0) }
            }
            guard case .inflated(let produced) = outcome, produced == bytes + header.byteSkip else {
                throw fail("the gzip data is corrupt or holds other than \(bytes) bytes (\(count) voxels)")
            }
            return NRRDImage(
                header: header, values: decode(inflated, from: header.byteSkip, count: count, header: header))
        }
    }

    private static func decode(_ data: Data, from start: Int, count: Int, header: NRRDHeader) -> [Float] {
        data.withUnsafeBytes { raw in
            let base = raw.baseAddress!.advanced(by: start)
            let swap = header.bigEndian
            func load<T: FixedWidthInteger>(_ type: T.Type, _ i: Int) -> T {
                let value = base.loadUnaligned(fromByteOffset: i * MemoryLayout<T>.size, as: T.self)
                return swap ? T(bigEndian: value) : T(littleEndian: value)
            }
            return (0..<count).map { i -> Float in
                switch header.type {
                case .int8: return Float(load(Int8.self, i))
                case .uint8: return Float(load(UInt8.self, i))
                case .int16: return Float(load(Int16.self, i))
                case .uint16: return Float(load(UInt16.self, i))
                case .int32: return Float(load(Int32.self, i))
                case .uint32: return Float(load(UInt32.self, i))
                case .int64: return Float(load(Int64.self, i))
                case .uint64: return Float(load(UInt64.self, i))
                case .float32: return Float(bitPattern: load(UInt32.self, i))
                case .float64: return Float(Double(bitPattern: load(UInt64.self, i)))
                }
            }
        }
    }

    /// Writes an attached-header NRRD atomically: gzip-encoded (raw when `compress` is false), little endian, in
    /// LPS with `space directions` and `space origin` from `geometry`, `sizes` fastest first with a leading
    /// `list` axis when `kinds` says so, then `keyValues` as `key:=value` lines.
    ///
    /// - Throws: `ImageFileError.invalidArgument` for values that do not fill `sizes`, `.unwritable`.
    public static func write(
        _ values: [Float], type: NRRDHeader.ScalarType, sizes: [Int], kinds: [String]? = nil,
        geometry: VolumeGeometry, keyValues: [(key: String, value: String)] = [], compress: Bool = true,
        to path: String
    ) throws {
        let kinds = kinds ?? Array(repeating: "domain", count: sizes.count)
        guard values.count == sizes.reduce(1, *), kinds.count == sizes.count,
            kinds.filter({ $0 == "domain" }).count == 3
        else {
            throw ImageFileError.invalidArgument(
                "NRRD: \(values.count) values for sizes \(sizes) and kinds \(kinds) (three domain axes)")
        }
        let number = { (value: Double) in
            value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
        }
        var domain = 0
        let directions = kinds.map { kind -> String in
            guard kind == "domain" else { return "none" }
            defer { domain += 1 }
            let spacing = geometry.spacing[2 - domain]
            return "(" + (0..<3).map { number(geometry.direction[$0 * 3 + domain] * spacing) }.joined(separator: ",")
                + ")"
        }
        var header = """
            NRRD0004
            # Complete NRRD file format specification at:
            # http://teem.sourceforge.net/nrrd/format.html
            type: \(type.nrrdName)
            dimension: \(sizes.count)
            space: left-posterior-superior
            sizes: \(sizes.map(String.init).joined(separator: " "))
            space directions: \(directions.joined(separator: " "))
            kinds: \(kinds.joined(separator: " "))
            endian: little
            encoding: \(compress ? "gzip" : "raw")
            space origin: (\(geometry.origin.map(number).joined(separator: ",")))

            """
        for (key, value) in keyValues { header += "\(NRRDHeader.escape(key)):=\(NRRDHeader.escape(value))\n" }
        header += "\n"
        var data = Data(count: values.count * type.size)
        data.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress!
            func store<T: FixedWidthInteger>(_ value: T, _ i: Int) {
                base.storeBytes(of: value.littleEndian, toByteOffset: i * MemoryLayout<T>.size, as: T.self)
            }
            for (i, value) in values.enumerated() {
                switch type {
                case .int8: store(Int8(clamping: Int(value.rounded())), i)
                case .uint8: store(UInt8(clamping: Int(value.rounded())), i)
                case .int16: store(Int16(clamping: Int(value.rounded())), i)
                case .uint16: store(UInt16(clamping: Int(value.rounded())), i)
                case .int32: store(Int32(clamping: Int(value.rounded())), i)
                case .uint32: store(UInt32(clamping: Int(value.rounded())), i)
                case .int64: store(Int64(value.rounded()), i)
                case .uint64: store(UInt64(max(0, value.rounded())), i)
                case .float32: store(value.bitPattern, i)
                case .float64: store(Double(value).bitPattern, i)
                }
            }
        }
        if compress {
            guard let compressed = Gzip.compress(data) else {
                throw ImageFileError.unwritable(file: path, reason: "gzip compression failed")
            }
            data = compressed
        }
        do {
            try writeAtomically(Data(header.utf8) + data, to: path)
        } catch {
            throw ImageFileError.unwritable(file: path, reason: "\(error)")
        }
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
