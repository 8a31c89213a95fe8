// MARK: - Modality values without intermediate arrays

extension DICOMFile {
    /// The modality transformation of a frame: none, Rescale Slope/Intercept (in double) or the Modality LUT.
    enum ModalityTransform {
        case identity
        case rescale(slope: Double, intercept: Double)
        case lookup(LookupTable)
    }

    /// The transformation `modalityFrame` applies to frame `index` (Modality LUT Sequence first, then the frame's
    /// rescale).
    func modalityTransform(frame index: Int) throws -> ModalityTransform {
        if let lut = try modalityLUT() { return .lookup(lut) }
        if let (slope, intercept) = rescale(frame: index) { return .rescale(slope: slope, intercept: intercept) }
        return .identity
    }

    /// Modality values of one grayscale frame written into `destination` ([rows, columns] Floats), the values of
    /// `modalityFrame(_:)`. Native and DCMTK-decoded frames of 8, 16 or 32 bits go from the file's bytes straight
    /// to Float32 (mask, sign extension and rescale in one pass, rescale in double); other frames go through
    /// the general decoder.
    ///
    /// - Throws: what `modalityFrame(_:)` throws. Rests on `cdcmtk_read_pixels`, `cdcmtk_decode_frame`.
    public func modalityFrame(_ index: Int, into destination: UnsafeMutableBufferPointer<Float>) throws {
        guard !isColor else {
            throw DICOMError.unsupportedImage(
                file: path, reason: "\(photometricInterpretation) is colour; use rgbFrame for its pixels")
        }
        precondition(destination.count == rows * columns, "modalityFrame: destination holds one frame")
        guard let info = pixelInfo else { throw DICOMError.noPixelData(file: path) }
        guard index >= 0, index < frameCount else {
            throw DICOMError.frameOutOfRange(file: path, frame: index, frameCount: frameCount)
        }
        let syntax = TransferSyntax(uid: transferSyntaxUID)
        if info.encapsulated && syntax.codec == .jpeg2000 && samplesPerPixel == 1 {
            // OpenJPEG's Int32 samples straight to Float32.
            let transform = try modalityTransform(frame: index)
            let codestream = try frameLock.withLock { try frameCodestream(index, fragmentCount: info.fragmentCount) }
            try JPEG2000Decoder.withDecodedImage(codestream, file: self, frame: index) { components, _ in
                let samples = components[0]
                Self.convert(
                    count: destination.count, bitsStored: bitsStored, signed: isSigned, transform: transform,
                    into: destination
                ) { Int64(samples[$0]) }
            }
            return
        }
        let direct =
            [8, 16, 32].contains(bitsAllocated) && samplesPerPixel == 1
            && (!info.encapsulated || syntax.codec == .dcmtk)
        guard direct else {
            let values = try modalityFrameThroughStoredValues(index)
            _ = destination.update(fromContentsOf: values)
            return
        }
        let transform = try modalityTransform(frame: index)
        let count = frameBytes
        var bytes = [UInt8](unsafeUninitializedCapacity: (count + 1) & ~1) { _, initialized in
            initialized = (count + 1) & ~1
        }
        try bytes.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return }
            if info.encapsulated {
                try frameLock.withLock { try validateBeforeDCMTK(index, fragmentCount: info.fragmentCount) }
                _ = try handle.decodeFrame(index, into: raw)
            } else {
                guard index * count + count <= info.length else {
                    throw DICOMError.shortPixelData(
                        file: path, expectedBytes: index * count + count,
                        actualBytes: info.length)
                }
                try handle.readPixels(offset: index * count, count: count, into: base)
            }
            if bitsAllocated == 32 && !info.encapsulated && syntax.isBigEndian {
                // DCMTK swaps OW words to little endian; a 32-bit value also needs its two words exchanged.
                for i in stride(from: 0, to: count - 3, by: 4) {
                    raw.swapAt(i, i + 2)
                    raw.swapAt(i + 1, i + 3)
                }
            }
            Self.convert(
                UnsafeRawBufferPointer(raw), bitsAllocated: bitsAllocated, bitsStored: bitsStored,
                signed: isSigned, transform: transform, into: destination)
        }
    }

    /// Little-endian samples of `bitsAllocated` bits → values of their low `bitsStored` bits (sign-extended when
    /// `signed`, as pydicom's unused-bit correction) → the modality transform → Float32.
    static func convert(
        _ raw: UnsafeRawBufferPointer, bitsAllocated: Int, bitsStored: Int, signed: Bool,
        transform: ModalityTransform, into out: UnsafeMutableBufferPointer<Float>
    ) {
        switch bitsAllocated {
        case 8: convert(raw, as: UInt8.self, bitsStored: bitsStored, signed: signed, transform: transform, into: out)
        case 16: convert(raw, as: UInt16.self, bitsStored: bitsStored, signed: signed, transform: transform, into: out)
        default: convert(raw, as: UInt32.self, bitsStored: bitsStored, signed: signed, transform: transform, into: out)
        }
    }

    @inline(__always)
    private static func convert<Raw: FixedWidthInteger & UnsignedInteger>(
        _ raw: UnsafeRawBufferPointer, as _: Raw.Type, bitsStored: Int, signed: Bool, transform: ModalityTransform,
        into out: UnsafeMutableBufferPointer<Float>
    ) {
        let size = MemoryLayout<Raw>.size
        convert(count: out.count, bitsStored: bitsStored, signed: signed, transform: transform, into: out) {
            Int64(Raw(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * size, as: Raw.self)))
        }
    }

    /// Sample `i` = `stored(i)` → its low `bitsStored` bits, sign-extended when `signed` → the transform → Float32.
    @inline(__always)
    static func convert(
        count: Int, bitsStored: Int, signed: Bool, transform: ModalityTransform,
        into out: UnsafeMutableBufferPointer<Float>, _ stored: (Int) -> Int64
    ) {
        let shift = Int64(64 - bitsStored)
        let mask = bitsStored >= 64 ? Int64(-1) : (Int64(1) << Int64(bitsStored)) - 1
        @inline(__always) func value(_ i: Int) -> Int64 {
            signed ? (stored(i) << shift) >> shift : stored(i) & mask
        }
        switch transform {
        case .identity:
            for i in 0..<count { out[i] = Float(value(i)) }
        case .rescale(let slope, let intercept):
            for i in 0..<count { out[i] = Float(Double(value(i)) * slope + intercept) }
        case .lookup(let lut):
            for i in 0..<count { out[i] = Float(lut.apply(Int(value(i)))) }
        }
    }
}
