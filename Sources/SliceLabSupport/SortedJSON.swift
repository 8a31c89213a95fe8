import Foundation

/// JSON text with sorted keys (deterministic bytes) from `Codable` values: the one way SliceLab writes the JSON it
/// stores in results files and manifests, so text inside it is always escaped.
public enum SortedJSON {
    /// An encoder with sorted keys.
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    /// `value` as compact JSON text with sorted keys.
    /// - Throws: `EncodingError` for values JSON cannot hold (a non-finite number).
    public static func string<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
