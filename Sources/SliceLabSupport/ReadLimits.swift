import Foundation

/// Bounds on what a reader of outside files may allocate, checked against the sizes a header claims before
/// any value is allocated.
///
/// The bound is on the decoded size of one image, volume or dataset: its values (pixels × channels × frames)
/// times the bytes each takes in memory: 4 for images and volumes (SliceLab holds them as Float32), the
/// element size for HDF5 datasets.
public struct ReadLimits: Sendable, Equatable, CustomStringConvertible {
    /// The most bytes one decoded image, volume or dataset may take.
    public var maxBytes: Int
    /// How the user raises the limit, appended to every refusal ("raise it with --max-memory"); set by whoever
    /// offers the setting, so the libraries need not know its name.
    public var remedy: String?

    /// The default: 4 GiB.
    public static let standard = ReadLimits(maxBytes: 4 << 30)

    public init(maxBytes: Int, remedy: String? = nil) {
        self.maxBytes = max(0, maxBytes)
        self.remedy = remedy
    }

    /// Parses a size: bytes, or a number with K, M, G or T (binary multiples, an optional trailing "B" or
    /// "iB"): "4G", "512M", "1.5GiB", "1000000". Nil for anything else.
    public init?(parsing text: String) {
        var digits = text.trimmingCharacters(in: .whitespaces).uppercased()
        for suffix in ["IB", "B"] where digits.hasSuffix(suffix) && digits.count > suffix.count {
            digits.removeLast(suffix.count)
            break
        }
        var multiplier: Double = 1
        if let unit = digits.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][String(unit)] {
            multiplier = pow(1024, Double(power))
            digits.removeLast()
        }
        guard let number = Double(digits), number.isFinite, number > 0, number * multiplier < 0x1p62 else {
            return nil
        }
        self.init(maxBytes: Int(number * multiplier))
    }

    /// The bound for people: "4 GiB", "512 MiB", "1000 bytes".
    public var description: String { Self.format(bytes: Double(maxBytes)) }

    /// A byte count for people, in binary units.
    public static func format(bytes: Double) -> String {
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = bytes
        var index = 0
        while value >= 1024, index < units.count - 1 {
            value /= 1024
            index += 1
        }
        if index == 0 { return "\(Int(value)) bytes" }
        return value == value.rounded()
            ? "\(Int(value)) \(units[index])" : String(format: "%.1f %@", value, units[index])
    }

    /// Checks that `extents` values of `bytesPerValue` bytes fit the bound (overflow-safe).
    ///
    /// - Parameters:
    ///   - what: what is being read, for the message ("/image", "frame", "series of 300 slices").
    /// - Throws: `ReadLimitError.tooLarge` naming the file, the claimed extents, the size and the limit.
    public func check(_ extents: [Int], bytesPerValue: Int, file: String, what: String) throws {
        var bytes = Double(bytesPerValue)
        var exact = bytesPerValue
        var overflow = false
        for extent in extents {
            bytes *= Double(max(extent, 0))
            let (product, o) = exact.multipliedReportingOverflow(by: max(extent, 0))
            exact = product
            overflow = overflow || o
        }
        guard overflow || exact > maxBytes else { return }
        throw ReadLimitError.tooLarge(
            file: file,
            reason: "\(what) (\(extents.map(String.init).joined(separator: " × ")) values) would take "
                + "\(Self.format(bytes: bytes)) in memory, over the read limit of \(self)"
                + (remedy.map { " (\($0))" } ?? ""))
    }
}

/// A file that claims more than the read limit allows; nothing was allocated.
public enum ReadLimitError: Error, CustomStringConvertible, Equatable {
    case tooLarge(file: String, reason: String)

    public var description: String {
        switch self {
        case .tooLarge(let file, let reason): return "\(file): refused: \(reason)"
        }
    }
}
