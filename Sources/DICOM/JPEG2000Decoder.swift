import COpenJPEG

/// Decodes JPEG 2000 (and HTJ2K, with OpenJPEG ≥ 2.5) codestreams with OpenJPEG: the free DCMTK has no JPEG 2000
/// codec. The only file of the package that calls OpenJPEG.
enum JPEG2000Decoder {
    /// The bytes being decoded and the decoder's messages; passed to OpenJPEG's callbacks as user data.
    private final class Context {
        let bytes: UnsafeRawBufferPointer
        var offset = 0
        var messages: [String] = []

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    }

    /// SOC (2 bytes) and the smallest SIZ segment (marker 2, Lsiz 38 + 3 for one component): ISO/IEC 15444-1 A.5.1.
    static let minimumCodestreamBytes = 45

    /// Decodes one frame's codestream (raw J2K or a JP2 file) into stored values interleaved per pixel.
    /// The inverse multi-component transform (YBR_ICT, YBR_RCT) is applied by OpenJPEG, so colour arrives as RGB.
    /// Rests on `opj_read_header`, `opj_decode`, `opj_end_decompress`.
    static func decode(_ data: [UInt8], file: DICOMFile, frame: Int) throws -> DICOMFile.DecodedFrame {
        try withDecodedImage(data, file: file, frame: frame) { components, image in
            let componentCount = components.count
            let pixels = file.rows * file.columns
            var samples = [Int64](repeating: 0, count: pixels * componentCount)
            for (c, component) in components.enumerated() {
                for pixel in 0..<pixels { samples[pixel * componentCount + c] = Int64(component[pixel]) }
            }
            // Keep the low Bits Stored bits and sign-extend per Pixel Representation (pydicom's J2K sign
            // correction for codestreams whose signedness differs from the dataset's).
            let stored = Int64(file.bitsStored)
            if file.isSigned {
                let shift = 64 - stored
                for i in 0..<samples.count { samples[i] = (samples[i] << shift) >> shift }
            } else {
                let mask = (Int64(1) << stored) - 1
                for i in 0..<samples.count { samples[i] &= mask }
            }
            var photometric = file.photometricInterpretation
            if componentCount == 3
                && (photometric == "YBR_ICT" || photometric == "YBR_RCT"
                    || image.color_space == OPJ_CLRSPC_SRGB)
            {
                photometric = "RGB"
            }
            return DICOMFile.DecodedFrame(samples: samples, photometric: photometric)
        }
    }

    /// Decodes one frame's codestream and hands its components (rows × columns Int32 samples each, as many as
    /// the dataset's Samples per Pixel, checked) and the image header to `body`, while OpenJPEG's image lives.
    /// Rests on `opj_read_header`, `opj_codec_set_threads`, `opj_decode`, `opj_end_decompress`.
    static func withDecodedImage<T>(
        _ data: [UInt8], file: DICOMFile, frame: Int,
        _ body: ([UnsafeBufferPointer<Int32>], opj_image_t) throws -> T
    ) throws -> T {
        // A JP2 file (which some writers put in DICOM) is decoded from its contiguous codestream box.
        let codestream = contiguousCodestream(data) ?? data
        // OpenJPEG 2.5.0 reads past its own stream buffer when a codestream ends right after its SOC marker; no
        // codestream shorter than SOC and the smallest SIZ segment can be decoded, so those stop here.
        guard codestream.count >= minimumCodestreamBytes else {
            throw DICOMError.decodeFailed(
                file: file.path, frame: frame,
                reason: "JPEG 2000 codestream of "
                    + "\(codestream.count) bytes is shorter than the smallest main header (\(minimumCodestreamBytes) bytes)"
            )
        }
        try file.validateJPEG2000Codestream(codestream, frame: frame)
        return try codestream.withUnsafeBytes { bytes -> T in
            let context = Context(bytes: bytes)
            let unmanaged = Unmanaged.passRetained(context)
            defer { unmanaged.release() }
            func failure(_ what: String) -> DICOMError {
                let detail = context.messages.isEmpty ? "" : ": " + context.messages.joined(separator: "; ")
                return DICOMError.decodeFailed(file: file.path, frame: frame, reason: "JPEG 2000 \(what)\(detail)")
            }
            guard let codec = opj_create_decompress(OPJ_CODEC_J2K) else {
                throw failure("decoder unavailable")
            }
            defer { opj_destroy_codec(codec) }
            let user = unmanaged.toOpaque()
            let record: opj_msg_callback = { message, data in
                guard let message, let data else { return }
                let context = Unmanaged<Context>.fromOpaque(data).takeUnretainedValue()
                context.messages.append(String(cString: message).trimmingCharacters(in: .newlines))
            }
            opj_set_error_handler(codec, record, user)
            var parameters = opj_dparameters_t()
            opj_set_default_decoder_parameters(&parameters)
            guard opj_setup_decoder(codec, &parameters) != 0 else { throw failure("setup failed") }
            if DICOMFile.decodeThreads > 1 && opj_has_thread_support() != 0 {
                // Code blocks decoded on several threads; the result is the same as on one.
                _ = opj_codec_set_threads(codec, Int32(DICOMFile.decodeThreads))
            }

            guard let stream = opj_stream_default_create(1) else { throw failure("stream unavailable") }
            defer { opj_stream_destroy(stream) }
            opj_stream_set_user_data(stream, user, nil)
            opj_stream_set_user_data_length(stream, UInt64(bytes.count))
            opj_stream_set_read_function(stream) { buffer, count, data in
                guard let buffer, let data else { return OPJ_SIZE_T.max }
                let context = Unmanaged<Context>.fromOpaque(data).takeUnretainedValue()
                let remaining = context.bytes.count - context.offset
                if remaining <= 0 { return OPJ_SIZE_T.max }
                let n = min(Int(count), remaining)
                if let base = context.bytes.baseAddress {
                    buffer.copyMemory(from: base + context.offset, byteCount: n)
                }
                context.offset += n
                return OPJ_SIZE_T(n)
            }
            opj_stream_set_skip_function(stream) { count, data in
                guard let data else { return -1 }
                let context = Unmanaged<Context>.fromOpaque(data).takeUnretainedValue()
                let target = min(max(context.offset + Int(count), 0), context.bytes.count)
                let skipped = target - context.offset
                context.offset = target
                return OPJ_OFF_T(skipped)
            }
            opj_stream_set_seek_function(stream) { position, data in
                guard let data else { return 0 }
                let context = Unmanaged<Context>.fromOpaque(data).takeUnretainedValue()
                guard position >= 0, Int(position) <= context.bytes.count else { return 0 }
                context.offset = Int(position)
                return 1
            }

            var imagePointer: UnsafeMutablePointer<opj_image_t>?
            guard opj_read_header(stream, codec, &imagePointer) != 0, let image = imagePointer else {
                throw failure("header unreadable")
            }
            defer { opj_image_destroy(image) }
            guard opj_decode(codec, stream, image) != 0, opj_end_decompress(codec, stream) != 0 else {
                throw failure("decoding failed")
            }
            let componentCount = Int(image.pointee.numcomps)
            guard componentCount == file.samplesPerPixel, let components = image.pointee.comps else {
                throw failure("has \(componentCount) components but the dataset declares \(file.samplesPerPixel)")
            }
            let pixels = file.rows * file.columns
            var planes: [UnsafeBufferPointer<Int32>] = []
            for c in 0..<componentCount {
                let component = components[c]
                guard Int(component.w) == file.columns, Int(component.h) == file.rows, let data = component.data
                else {
                    throw failure("component \(c) is \(component.w)×\(component.h), not \(file.columns)×\(file.rows)")
                }
                planes.append(UnsafeBufferPointer(start: data, count: pixels))
            }
            return try body(planes, image.pointee)
        }
    }

    /// The payload of the 'jp2c' box of a JP2 file, or nil when `data` is not JP2 or its boxes do not fit
    /// (ISO/IEC 15444-1 Annex I). A box length of 0, or one beyond the data, runs to the end of the data.
    static func contiguousCodestream(_ data: [UInt8]) -> [UInt8]? {
        guard data.starts(with: [0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20]) else { return nil }
        var offset = 0
        while offset + 8 <= data.count {
            let remaining = data.count - offset
            var length =
                Int(data[offset]) << 24 | Int(data[offset + 1]) << 16 | Int(data[offset + 2]) << 8
                | Int(data[offset + 3])
            let type = Array(data[(offset + 4)..<(offset + 8)])
            var header = 8
            if length == 1 {
                // The 64-bit (XL) length follows the type.
                guard remaining >= 16 else { return nil }
                let extended = (8..<16).reduce(UInt64(0)) { $0 << 8 | UInt64(data[offset + $1]) }
                length = extended > UInt64(remaining) ? remaining : Int(extended)
                header = 16
            }
            if length == 0 || length > remaining { length = remaining }
            guard length >= header else { return nil }
            if type == [0x6A, 0x70, 0x32, 0x63] { return Array(data[(offset + header)..<(offset + length)]) }
            offset += length
        }
        return nil
    }
}
