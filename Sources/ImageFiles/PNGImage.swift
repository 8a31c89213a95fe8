import CPNG
import Foundation
import SliceLabSupport

/// A PNG image in memory: `rows × columns × channels` interleaved samples, row-major.
///
/// Channels: 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA. Palette images are expanded to RGB (or RGBA with
/// transparency) on reading; gray images of 1, 2 or 4 bits are expanded to 8 bits.
public struct PNGImage: Equatable, Sendable {
    /// Sample storage at the file's bit depth.
    public enum Samples: Equatable, Sendable {
        case uint8([UInt8])
        case uint16([UInt16])
    }

    public let rows: Int
    public let columns: Int
    public let channels: Int
    public let samples: Samples

    /// Bits per sample: 8 or 16.
    public var bitDepth: Int {
        if case .uint8 = samples { return 8 }
        return 16
    }

    /// Creates an 8-bit image. Precondition: `samples.count == rows * columns * channels`, channels 1...4.
    public init(rows: Int, columns: Int, channels: Int, samples: [UInt8]) throws {
        try Self.check(rows, columns, channels, samples.count)
        (self.rows, self.columns, self.channels, self.samples) = (rows, columns, channels, .uint8(samples))
    }

    /// Creates a 16-bit image.
    public init(rows: Int, columns: Int, channels: Int, samples: [UInt16]) throws {
        try Self.check(rows, columns, channels, samples.count)
        (self.rows, self.columns, self.channels, self.samples) = (rows, columns, channels, .uint16(samples))
    }

    private static func check(_ rows: Int, _ columns: Int, _ channels: Int, _ count: Int) throws {
        guard (1...4).contains(channels), rows > 0, columns > 0, rows * columns * channels == count else {
            throw ImageFileError.invalidArgument(
                "PNG image of \(rows)x\(columns)x\(channels) cannot hold \(count) samples")
        }
    }

    /// All samples widened to `Int`, for code that does not care about the bit depth.
    public var intSamples: [Int] {
        switch samples {
        case .uint8(let values): return values.map(Int.init)
        case .uint16(let values): return values.map(Int.init)
        }
    }

    // MARK: - Reading and writing

    /// Reads a PNG file.
    ///
    /// - Parameters:
    ///   - path: the file.
    ///   - limits: bounds rows × columns × channels × 4 bytes (the Float32 image SliceLab makes of it), checked
    ///     from the header before any pixel is allocated.
    /// - Throws: `ImageFileError.unreadable` (missing, not PNG, truncated, corrupt) or `.tooLarge` naming the limit.
    ///   Rests on `png_read_image`.
    public static func read(_ path: String, limits: ReadLimits = .standard) throws -> PNGImage {
        var image = cpng_image()
        var message = [CChar](repeating: 0, count: 256)
        let status = cpng_read(path, &image, UInt64(limits.maxBytes / 4), &message, message.count)
        defer { free(image.pixels) }
        guard status == 0, let pixels = image.pixels else {
            let reason = String(nulTerminated: message)
            if status == -2 {
                try limits.checkFile(
                    [Int(image.rows), Int(image.cols), Int(image.channels)], bytesPerValue: 4,
                    file: path, what: "the image")
                throw ImageFileError.tooLarge(file: path, reason: reason)
            }
            throw ImageFileError.unreadable(file: path, reason: reason)
        }
        let count = Int(image.rows) * Int(image.cols) * Int(image.channels)
        let (rows, columns, channels) = (Int(image.rows), Int(image.cols), Int(image.channels))
        if image.bit_depth == 16 {
            let values = pixels.withMemoryRebound(to: UInt16.self, capacity: count) {
                Array(UnsafeBufferPointer(start: $0, count: count))
            }
            return try PNGImage(rows: rows, columns: columns, channels: channels, samples: values)
        }
        return try PNGImage(
            rows: rows, columns: columns, channels: channels,
            samples: Array(UnsafeBufferPointer(start: pixels, count: count)))
    }

    /// Writes the image as PNG, atomically.
    ///
    /// - Throws: `ImageFileError.unwritable` naming `path`; any earlier file at `path` is left intact.
    ///   Rests on `png_write_row`.
    public func write(to path: String) throws {
        try writeAtomically(to: path) { temporary in
            guard let file = fopen(temporary, "wb") else {
                throw ImageFileError.unwritable(file: path, reason: String(cString: strerror(errno)))
            }
            let status = encode(into: file)
            let closed = fclose(file)
            if let status { throw ImageFileError.unwritable(file: path, reason: status) }
            guard closed == 0 else {
                throw ImageFileError.unwritable(file: path, reason: String(cString: strerror(errno)))
            }
        }
    }

    /// The image encoded as PNG bytes (for embedding in reports), in memory: no temporary file.
    /// Rests on `png_write_row` and `open_memstream`.
    public func encoded() throws -> Data {
        var buffer: UnsafeMutablePointer<CChar>?
        var size = 0
        guard let stream = open_memstream(&buffer, &size) else {
            throw ImageFileError.unwritable(file: "(memory)", reason: String(cString: strerror(errno)))
        }
        let status = encode(into: stream)
        let closed = fclose(stream)
        defer { free(buffer) }
        guard status == nil, closed == 0, let buffer else {
            throw ImageFileError.unwritable(file: "(memory)", reason: status ?? "cannot encode PNG in memory")
        }
        return Data(bytes: buffer, count: size)
    }

    /// Encodes the image into an open stream; returns libpng's message on failure.
    private func encode(into file: UnsafeMutablePointer<FILE>) -> String? {
        var message = [CChar](repeating: 0, count: 256)
        let status: Int32
        switch samples {
        case .uint8(let values):
            status = values.withUnsafeBytes {
                cpng_write(
                    file, $0.bindMemory(to: UInt8.self).baseAddress, UInt32(rows), UInt32(columns),
                    UInt32(channels), 8, &message, message.count)
            }
        case .uint16(let values):
            status = values.withUnsafeBytes {
                cpng_write(
                    file, $0.bindMemory(to: UInt8.self).baseAddress, UInt32(rows), UInt32(columns),
                    UInt32(channels), 16, &message, message.count)
            }
        }
        return status == 0 ? nil : String(nulTerminated: message)
    }
}
