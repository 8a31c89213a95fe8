import CDeflate
import Foundation

/// Whole-buffer gzip with libdeflate (the only caller of `CDeflate`): one pass, no stream state, about twice
/// zlib's `gzread` speed on a NIfTI volume.
enum Gzip {
    /// The outcome of inflating a gzip file.
    enum Outcome {
        /// This many bytes were written: every member, in order.
        case inflated(Int)
        /// More bytes than the output holds, or data after the members that is not gzip: the caller falls back
        /// to a streaming reader.
        case needsStreaming
        /// The first member is not valid deflate data, or ends early.
        case corrupt
    }

    /// Inflates every gzip member of `compressed` into `output` (sized to what the header promises).
    /// Rests on `libdeflate_gzip_decompress_ex`.
    static func inflate(_ compressed: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Outcome {
        guard let decompressor = libdeflate_alloc_decompressor(), let source = compressed.baseAddress,
            let destination = output.baseAddress
        else { return .needsStreaming }
        defer { libdeflate_free_decompressor(decompressor) }
        var (consumed, produced) = (0, 0)
        while consumed < compressed.count {
            var memberIn = 0
            var memberOut = 0
            switch libdeflate_gzip_decompress_ex(
                decompressor, source + consumed, compressed.count - consumed,
                destination + produced, output.count - produced, &memberIn,
                &memberOut)
            {
            case LIBDEFLATE_SUCCESS: (consumed, produced) = (consumed + memberIn, produced + memberOut)
            case LIBDEFLATE_INSUFFICIENT_SPACE: return .needsStreaming
            default: return consumed == 0 ? .corrupt : .needsStreaming
            }
        }
        return .inflated(produced)
    }

    /// `data` as one gzip member (level 6, zlib's default). Rests on `libdeflate_gzip_compress`.
    static func compress(_ data: Data) -> Data? {
        guard let compressor = libdeflate_alloc_compressor(6) else { return nil }
        defer { libdeflate_free_compressor(compressor) }
        let bound = libdeflate_gzip_compress_bound(compressor, data.count)
        var output = Data(count: bound)
        let written = data.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { destination in
                libdeflate_gzip_compress(
                    compressor, source.baseAddress, data.count, destination.baseAddress, bound)
            }
        }
        guard written > 0 else { return nil }
        output.count = written
        return output
    }
}
