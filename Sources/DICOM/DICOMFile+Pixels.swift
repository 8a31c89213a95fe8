// MARK: - Native, DCMTK-decoded and JPEG 2000 frames

extension DICOMFile {
    /// A native (uncompressed) frame, read lazily from the file. Rests on `cdcmtk_read_pixels`.
    func nativeFrame(_ index: Int, pixelDataLength: Int) throws -> DecodedFrame {
        let pixels = rows * columns
        if bitsAllocated == 1 {
            let firstBit = index * pixels * samplesPerPixel
            let byteStart = firstBit / 8
            let bitShift = firstBit % 8
            let byteCount = min((bitShift + pixels * samplesPerPixel + 7) / 8, pixelDataLength - byteStart)
            var bytes = [UInt8](repeating: 0, count: (byteCount + 1) & ~1)
            try readNative(offset: byteStart, count: byteCount, into: &bytes, pixelDataLength: pixelDataLength)
            var samples = [Int64](repeating: 0, count: pixels * samplesPerPixel)
            for i in 0..<samples.count {
                let bit = bitShift + i
                samples[i] = Int64((bytes[bit >> 3] >> UInt8(bit & 7)) & 1)
            }
            return DecodedFrame(samples: samples, photometric: photometricInterpretation)
        }
        if photometricInterpretation == "YBR_FULL_422" && samplesPerPixel == 3 {
            // Two pixels share one Cb and one Cr: Y1 Y2 Cb Cr (PS3.3 C.7.6.3.1.2).
            let bytesPerSample = bitsAllocated / 8
            let count = pixels * 2 * bytesPerSample
            var bytes = [UInt8](repeating: 0, count: count)
            try readNative(offset: index * count, count: count, into: &bytes, pixelDataLength: pixelDataLength)
            let packed = normalise(bytes, sampleCount: pixels * 2)
            var samples = [Int64](repeating: 0, count: pixels * 3)
            for pair in 0..<(pixels / 2) {
                let y1 = packed[4 * pair]
                let y2 = packed[4 * pair + 1]
                let cb = packed[4 * pair + 2]
                let cr = packed[4 * pair + 3]
                samples.replaceSubrange((6 * pair)..<(6 * pair + 6), with: [y1, cb, cr, y2, cb, cr])
            }
            return DecodedFrame(samples: samples, photometric: "YBR_FULL")
        }
        let count = frameBytes
        var bytes = [UInt8](repeating: 0, count: count)
        try readNative(offset: index * count, count: count, into: &bytes, pixelDataLength: pixelDataLength)
        if bitsAllocated == 32 && TransferSyntax(uid: transferSyntaxUID).isBigEndian {
            // DCMTK swaps OW words to little endian; a 32-bit value also needs its two words exchanged.
            for i in stride(from: 0, to: count - 3, by: 4) {
                bytes.swapAt(i, i + 2)
                bytes.swapAt(i + 1, i + 3)
            }
        }
        var samples = normalise(bytes, sampleCount: pixels * samplesPerPixel)
        if samplesPerPixel > 1 && planarConfiguration == 1 { samples = interleave(samples) }
        return DecodedFrame(samples: samples, photometric: photometricInterpretation)
    }

    private func readNative(offset: Int, count: Int, into bytes: inout [UInt8], pixelDataLength: Int) throws {
        guard offset >= 0, offset + count <= pixelDataLength else {
            throw DICOMError.shortPixelData(file: path, expectedBytes: offset + count, actualBytes: pixelDataLength)
        }
        try bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            try handle.readPixels(offset: offset, count: count, into: base)
        }
    }

    /// A frame decoded by DCMTK's RLE, JPEG or JPEG-LS codec. Rests on `cdcmtk_decode_frame`.
    func dcmtkFrame(_ index: Int) throws -> DecodedFrame {
        let count = (frameBytes + 1) & ~1
        var bytes = [UInt8](repeating: 0, count: count)
        let model = try bytes.withUnsafeMutableBytes { try handle.decodeFrame(index, into: $0) }
        var samples = normalise(bytes, sampleCount: rows * columns * samplesPerPixel)
        // DCMTK's RLE decoder keeps the declared planar configuration; its JPEG decoders return colour by pixel.
        let planar = transferSyntaxUID == TransferSyntax.rleLossless && planarConfiguration == 1
        if samplesPerPixel > 1 && planar { samples = interleave(samples) }
        let photometric = model.isEmpty ? photometricInterpretation : model.uppercased()
        return DecodedFrame(samples: samples, photometric: photometric)
    }

    /// Little-endian samples of Bits Allocated width → values of the low Bits Stored bits, sign-extended when
    /// Pixel Representation is 1 (as pydicom's unused-bit correction does).
    func normalise(_ bytes: [UInt8], sampleCount: Int) -> [Int64] {
        var samples = [Int64](repeating: 0, count: sampleCount)
        let stored = bitsStored
        let shift = Int64(64 - stored)
        let signed = isSigned
        bytes.withUnsafeBytes { raw in
            samples.withUnsafeMutableBufferPointer { out in
                switch bitsAllocated {
                case 8:
                    for i in 0..<sampleCount { out[i] = Int64(raw[i]) }
                case 16:
                    for i in 0..<sampleCount {
                        out[i] = Int64(UInt16(raw[2 * i]) | UInt16(raw[2 * i + 1]) << 8)
                    }
                default:
                    for i in 0..<sampleCount {
                        let value =
                            UInt32(raw[4 * i]) | UInt32(raw[4 * i + 1]) << 8
                            | UInt32(raw[4 * i + 2]) << 16 | UInt32(raw[4 * i + 3]) << 24
                        out[i] = Int64(value)
                    }
                }
                if signed {
                    for i in 0..<sampleCount { out[i] = (out[i] << shift) >> shift }
                } else if stored < 64 {
                    let mask = (Int64(1) << Int64(stored)) - 1
                    for i in 0..<sampleCount { out[i] &= mask }
                }
            }
        }
        return samples
    }

    /// Planes [samples, rows, columns] → pixels [rows, columns, samples].
    func interleave(_ planes: [Int64]) -> [Int64] {
        let pixels = rows * columns
        var out = [Int64](repeating: 0, count: planes.count)
        for sample in 0..<samplesPerPixel {
            for pixel in 0..<pixels { out[pixel * samplesPerPixel + sample] = planes[sample * pixels + pixel] }
        }
        return out
    }

    /// The JPEG 2000 codestream of one frame, joined from its fragments (PS3.5 A.4): one fragment per frame,
    /// all fragments for a single frame, the basic offset table, or else a new frame at each fragment that
    /// starts with a codestream marker.
    func frameCodestream(_ index: Int, fragmentCount: Int) throws -> [UInt8] {
        let map = try fragmentsPerFrame(fragmentCount: fragmentCount)
        guard index < map.count, !map[index].isEmpty else {
            throw DICOMError.decodeFailed(
                file: path, frame: index,
                reason: "no fragments for this frame (\(fragmentCount) fragments)")
        }
        var codestream: [UInt8] = []
        for fragment in map[index] { codestream += try handle.fragment(fragment) }
        return codestream
    }

    private func fragmentsPerFrame(fragmentCount: Int) throws -> [[Int]] {
        if let fragmentMap { return fragmentMap }
        var map: [[Int]]
        if fragmentCount == frameCount {
            map = (0..<frameCount).map { [$0] }
        } else if frameCount == 1 {
            map = [Array(0..<fragmentCount)]
        } else {
            let table = try handle.offsetTable()
            if table.count == frameCount {
                map = Array(repeating: [], count: frameCount)
                var position = 0
                for fragment in 0..<fragmentCount {
                    let frame = (table.lastIndex { Int($0) <= position }) ?? 0
                    map[frame].append(fragment)
                    position += 8 + (try handle.fragmentLength(fragment))
                }
            } else {
                map = []
                for fragment in 0..<fragmentCount {
                    let bytes = try handle.fragment(fragment)
                    let startsCodestream =
                        bytes.starts(with: [0xFF, 0x4F, 0xFF, 0x51])
                        || bytes.starts(with: [0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20])
                    if startsCodestream || map.isEmpty {
                        map.append([fragment])
                    } else {
                        map[map.count - 1].append(fragment)
                    }
                }
            }
        }
        fragmentMap = map
        return map
    }
}
