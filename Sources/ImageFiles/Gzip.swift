import CDeflate
import Foundation

/// Whole-buffer gzip decompression with libdeflate (the only caller of `CDeflate`): one pass, no stream state,
/// several times zlib's `gzread` speed on a NIfTI volume.
enum Gzip {
    /// The outcome of inflating a gzip file.
    enum Outcome {
        /// The decompressed bytes: every member, in order.
        case inflated([UInt8])
        /// More than `capacity` bytes, or data after the members that is not gzip: the caller falls back to a
        /// streaming reader.
        case needsStreaming
        /// The first member is not valid deflate data, or ends early.
        case corrupt
    }

    /// Inflates every gzip member of `compressed` into at most `capacity` bytes (the size the header promises).
    /// Rests on `libdeflate_gzip_decompress_ex`.
    static func inflate(_ compressed: UnsafeRawBufferPointer, capacity: Int) -> Outcome {
        guard let decompressor = libdeflate_alloc_decompressor() else { return .needsStreaming }
        defer { libdeflate_free_decompressor(decompressor) }
        var output = [UInt8](repeating: 0, count: capacity)
        var (consumed, produced) = (0, 0)
        let result: Outcome? = output.withUnsafeMutableBytes { out in
            while consumed < compressed.count {
                var memberIn = 0, memberOut = 0
                let status = libdeflate_gzip_decompress_ex(
                    decompressor, compressed.baseAddress! + consumed, compressed.count - consumed,
                    out.baseAddress! + produced, out.count - produced, &memberIn, &memberOut)
                switch status {
                case LIBDEFLATE_SUCCESS:
                    consumed += memberIn
                    produced += memberOut
                case LIBDEFLATE_INSUFFICIENT_SPACE: return .needsStreaming
                default: return consumed == 0 ? .corrupt : .needsStreaming
                }
            }
            return nil
        }
        if let result { return result }
        output.removeSubrange(produced...)
        return .inflated(output)
    }
}
