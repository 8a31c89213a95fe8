import Foundation
import ImageFiles
import SliceLabSupport

/// A safetensors file (Hugging Face's format: an 8-byte little-endian header length, a JSON header mapping
/// each name to `dtype`, `shape` and `data_offsets`, then the raw little-endian tensors). F32, F16, BF16, F64,
/// I64 and I32 tensors are read as Float32 values.
///
/// Reference: the safetensors format specification (github.com/huggingface/safetensors, README "Format").
public struct SafetensorsFile {
    public let path: String
    /// Tensors by name, in header order of their data offsets.
    public let tensors: [String: FloatTensor]
    /// The element type each tensor had on disk ("F32", "F16", …).
    public let storedTypes: [String: String]
    /// The optional `__metadata__` string map.
    public let metadata: [String: String]

    /// The largest header accepted (100 MB, as the reference implementation).
    public static let maximumHeaderBytes = 100_000_000

    /// Reads and converts every tensor.
    ///
    /// - Throws: `DeepLabError.malformedWeights` naming the file and the cause: unreadable, truncated, a header
    ///   that is not JSON or lacks fields, an unsupported dtype, offsets outside the data or not matching the
    ///   shape.
    public static func read(_ path: String) throws -> SafetensorsFile {
        func bad(_ reason: String) -> DeepLabError { .malformedWeights(file: path, reason: reason) }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        } catch {
            throw bad("cannot read the file (\(error.localizedDescription))")
        }
        guard data.count >= 8 else { throw bad("truncated: \(data.count) bytes, fewer than the 8-byte header length") }
        let headerLength = data.prefix(8).enumerated().reduce(UInt64(0)) {
            $0 | UInt64($1.element) << (8 * UInt64($1.offset))
        }
        guard headerLength <= UInt64(maximumHeaderBytes) else {
            throw bad("header length \(headerLength) exceeds \(maximumHeaderBytes) bytes")
        }
        guard UInt64(data.count - 8) >= headerLength else {
            throw bad("truncated: header of \(headerLength) bytes but only \(data.count - 8) follow")
        }
        let headerEnd = 8 + Int(headerLength)
        let headerData = data.subdata(in: 8..<headerEnd)
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: headerData)
        } catch {
            throw bad("header is not valid JSON")
        }
        guard let header = json as? [String: Any] else { throw bad("header is not a JSON object") }
        let body = data.count - headerEnd
        var tensors: [String: FloatTensor] = [:]
        var types: [String: String] = [:]
        var metadata: [String: String] = [:]
        for (name, entry) in header {
            if name == "__metadata__" {
                guard let map = entry as? [String: Any] else { throw bad("__metadata__ is not an object") }
                for (k, v) in map { metadata[k] = (v as? String) ?? "\(v)" }
                continue
            }
            guard let fields = entry as? [String: Any], let dtype = fields["dtype"] as? String,
                let shapeValues = fields["shape"] as? [Any], let offsets = fields["data_offsets"] as? [Any],
                offsets.count == 2
            else { throw bad("tensor \"\(name)\" lacks dtype, shape or data_offsets") }
            let shape = try shapeValues.map { v -> Int in
                guard let n = (v as? NSNumber)?.intValue, n >= 0 else {
                    throw bad("tensor \"\(name)\" has a bad shape")
                }
                return n
            }
            guard let begin = (offsets[0] as? NSNumber)?.intValue, let end = (offsets[1] as? NSNumber)?.intValue,
                begin >= 0, begin <= end
            else { throw bad("tensor \"\(name)\" has bad data_offsets") }
            guard end <= body else {
                throw bad(
                    "truncated: tensor \"\(name)\" ends at byte \(end) of data but only \(body) bytes follow the header"
                )
            }
            let (count, overflow) = shape.reduce((1, false)) { acc, n in
                let (p, o) = acc.0.multipliedReportingOverflow(by: n)
                return (p, acc.1 || o)
            }
            guard let size = elementSize(dtype) else {
                throw bad("tensor \"\(name)\" has unsupported dtype \(dtype) (F32, F16, BF16, F64, I64, I32 are read)")
            }
            let (bytes, bytesOverflow) = count.multipliedReportingOverflow(by: size)
            guard !overflow, !bytesOverflow, bytes == end - begin else {
                let needed = overflow || bytesOverflow ? "more than \(Int.max)" : "\(bytes)"
                throw bad(
                    "tensor \"\(name)\": shape \(shape) of \(dtype) needs \(needed) bytes, offsets give \(end - begin)")
            }
            let start = data.startIndex + headerEnd + begin
            let values = convert(data[start..<(start + end - begin)], dtype: dtype, count: count)
            tensors[name] = FloatTensor(shape: shape, values: values)
            types[name] = dtype
        }
        return SafetensorsFile(path: path, tensors: tensors, storedTypes: types, metadata: metadata)
    }

    static func elementSize(_ dtype: String) -> Int? {
        switch dtype {
        case "F32", "I32": return 4
        case "F16", "BF16": return 2
        case "F64", "I64": return 8
        default: return nil
        }
    }

    private static func convert(_ bytes: Data, dtype: String, count: Int) -> [Float] {
        var values = [Float](repeating: 0, count: count)
        bytes.withUnsafeBytes { raw in
            values.withUnsafeMutableBufferPointer { out in
                for i in 0..<count {
                    switch dtype {
                    case "F32":
                        out[i] = Float(
                            bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)))
                    case "F16":
                        out[i] = Float(
                            Float16(
                                bitPattern: UInt16(
                                    littleEndian: raw.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))))
                    case "BF16":
                        let bits = UInt32(
                            UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self)))
                        out[i] = Float(bitPattern: bits << 16)
                    case "F64":
                        out[i] = Float(
                            Double(
                                bitPattern: UInt64(
                                    littleEndian: raw.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self))))
                    case "I64":
                        out[i] = Float(Int64(littleEndian: raw.loadUnaligned(fromByteOffset: 8 * i, as: Int64.self)))
                    default:
                        out[i] = Float(Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * i, as: Int32.self)))
                    }
                }
            }
        }
        return values
    }

    /// Writes Float32 tensors (and `num_batches_tracked` buffers as I64, as PyTorch stores them) atomically.
    ///
    /// - Throws: `ImageFileError` from the atomic write.
    public static func write(
        _ tensors: [(name: String, tensor: FloatTensor)], metadata: [String: String] = [:],
        to path: String
    ) throws {
        var header: [String: Any] = [:]
        if !metadata.isEmpty { header["__metadata__"] = metadata }
        var body = Data()
        for (name, tensor) in tensors {
            let isCount = name.hasSuffix("num_batches_tracked")
            let begin = body.count
            if isCount {
                for v in tensor.values { withUnsafeBytes(of: Int64(v).littleEndian) { body.append(contentsOf: $0) } }
            } else {
                for v in tensor.values {
                    withUnsafeBytes(of: v.bitPattern.littleEndian) { body.append(contentsOf: $0) }
                }
            }
            header[name] = [
                "dtype": isCount ? "I64" : "F32", "shape": tensor.shape, "data_offsets": [begin, body.count]
            ]
        }
        var json = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        while json.count % 8 != 0 { json.append(0x20) }
        var file = Data()
        withUnsafeBytes(of: UInt64(json.count).littleEndian) { file.append(contentsOf: $0) }
        file.append(json)
        file.append(body)
        try writeAtomically(file, to: path)
    }
}
