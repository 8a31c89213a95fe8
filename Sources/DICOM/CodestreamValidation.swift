import Foundation

// Checks of compressed frames before their decoders see them (issue #23).
//
// DCMTK 3.6.7 decodes RLE and JPEG frames one at a time (`DcmPixelData::getUncompressedFrame`) without some of the
// checks its whole-object path makes: a bad RLE segment offset is followed out of its fragment (SIGSEGV), and a
// TEM marker before a JPEG frame header makes its bit-depth pre-scan loop forever. OpenJPEG 2.5.0 mishandles
// unknown markers and decodes whatever size a codestream declares. Each frame's bytes are checked here first and
// refused with a typed error that names the file, the frame and the cause.

// MARK: - RLE

extension DICOMFile {
    /// The checks below for the frame's transfer syntax; every call of DCMTK's frame decoder comes after it.
    /// The caller holds `frameLock`.
    func validateBeforeDCMTK(_ index: Int, fragmentCount: Int) throws {
        if transferSyntaxUID == TransferSyntax.rleLossless {
            try validateRLEFrame(frameCodestream(index, fragmentCount: fragmentCount), frame: index)
        } else if Self.dcmtkJPEGSyntaxes.contains(transferSyntaxUID) {
            try validateJPEGFrame(
                frameCodestream(index, fragmentCount: fragmentCount), frame: index,
                fragmentCount: fragmentCount)
        }
    }

    /// Checks the RLE header of one frame (PS3.5 Annex G.4): 16 little-endian 32-bit values, the number of
    /// segments (1–15, one per byte of each sample: samples per pixel × bits allocated / 8), then each
    /// segment's offset from the start of the frame: the first 64, increasing, every one inside the frame.
    ///
    /// - Throws: `DICOMError.decodeFailed` naming the frame and the bad value.
    func validateRLEFrame(_ bytes: [UInt8], frame: Int) throws {
        func fail(_ reason: String) -> DICOMError {
            .decodeFailed(file: path, frame: frame, reason: "malformed RLE header: \(reason)")
        }
        guard bytes.count >= 64 else {
            throw fail("the frame holds \(bytes.count) bytes, less than its 64-byte header")
        }
        func word(_ i: Int) -> Int {
            Int(bytes[4 * i]) | Int(bytes[4 * i + 1]) << 8 | Int(bytes[4 * i + 2]) << 16 | Int(bytes[4 * i + 3]) << 24
        }
        let segments = word(0)
        let expected = samplesPerPixel * max(bitsAllocated / 8, 1)
        guard (1...15).contains(segments), segments == expected else {
            throw fail(
                "\(segments) segments, but \(samplesPerPixel) sample(s) of \(bitsAllocated) bits need \(expected)")
        }
        var previous = 0
        for s in 0..<segments {
            let offset = word(1 + s)
            guard s > 0 || offset == 64 else { throw fail("segment 1 starts at byte \(offset), not 64") }
            guard offset > previous else {
                throw fail("segment \(s + 1) starts at byte \(offset), not after segment \(s) (byte \(previous))")
            }
            guard offset < bytes.count else {
                throw fail("segment \(s + 1) starts at byte \(offset), past the frame's \(bytes.count) bytes")
            }
            previous = offset
        }
    }
}

// MARK: - JPEG (DCMTK's IJG builds)

extension DICOMFile {
    /// JPEG processes DCMTK decodes with its IJG builds (baseline, extended, progressive, lossless).
    static let dcmtkJPEGSyntaxes: Set<String> = [
        "1.2.840.10008.1.2.4.50", "1.2.840.10008.1.2.4.51", "1.2.840.10008.1.2.4.53", "1.2.840.10008.1.2.4.55",
        "1.2.840.10008.1.2.4.57", "1.2.840.10008.1.2.4.70"
    ]

    /// The most scans (SOS markers) a frame may hold: progressive encoders write about ten per component, and
    /// every scan makes the decoder pass over the whole image, so thousands of empty scans are work without data.
    static let maximumJPEGScans = 256

    /// Checks a JPEG frame before DCMTK sees it.
    ///
    /// DCMTK 3.6.7 walks the markers of a frame's first fragment to find its bit depth before any IJG code runs
    /// (`DJCodecDecoder::scanJpegDataForBitDepth`, dcmjpeg/libsrc/djcodecd.cc): its case for TEM (`FF 01`)
    /// does not advance, so a stream that reaches `FF 01` before its frame header loops forever, in every JPEG
    /// process (8, 12 and 16 bits). The walk trusts segment lengths and may start at any fragment DCMTK
    /// takes for the frame's first, so:
    /// - every fragment of the file is walked as DCMTK walks it (once per file) and refused if the walk
    ///   reaches `FF 01`;
    /// - the frame's first fragment must be well formed up to its frame header (ITU-T T.81 B.2): SOI, then only
    ///   DQT, DHT, DAC, DRI, APPn and COM segments (each inside the fragment, with optional `FF` fill bytes),
    ///   then an SOFn whose lines, samples per line and components are the image's Rows, Columns and Samples
    ///   per Pixel (a frame header larger than the image makes the decoder work through the declared size);
    /// - the frame may hold at most `maximumJPEGScans` scans.
    ///
    /// - Throws: `DICOMError.decodeFailed` naming the frame, the marker and its byte offset.
    func validateJPEGFrame(_ bytes: [UInt8], frame: Int, fragmentCount: Int) throws {
        func fail(_ reason: String) -> DICOMError {
            .decodeFailed(file: path, frame: frame, reason: "malformed JPEG: \(reason)")
        }
        if !jpegFragmentsWalked {
            for fragment in 0..<fragmentCount {
                if let offset = Self.dcmtkBitDepthWalkLoops(try handle.fragment(fragment)) {
                    throw fail(
                        "fragment \(fragment + 1) reaches marker FF 01 (TEM) at byte \(offset) before its "
                            + "frame header, on which DCMTK's JPEG pre-scan loops forever")
                }
            }
            jpegFragmentsWalked = true
        }
        func u16(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else {
            throw fail("the frame does not start with SOI (FF D8)")
        }
        var offset = 2
        header: while true {
            guard offset + 1 < bytes.count else { throw fail("no frame header (SOFn) before the end of the data") }
            guard bytes[offset] == 0xFF else {
                throw fail(String(format: "byte %02X at %d where a marker must be", bytes[offset], offset))
            }
            let marker = bytes[offset + 1]
            if marker == 0xFF {
                offset += 1
                continue
            }  // a fill byte
            guard offset + 4 <= bytes.count else { throw fail("a marker segment at byte \(offset) is cut off") }
            let length = u16(offset + 2)
            guard length >= 2, offset + 2 + length <= bytes.count else {
                throw fail(
                    String(
                        format: "marker FF %02X at byte %d has length %d, past the fragment's %d bytes",
                        marker, offset, length, bytes.count))
            }
            switch marker {
            case 0xDB, 0xC4, 0xCC, 0xDD, 0xE0...0xEF, 0xFE:  // DQT, DHT, DAC, DRI, APPn, COM
                offset += 2 + length
            case 0xC0...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:  // SOFn
                guard length >= 8 else { throw fail("frame header at byte \(offset) has length \(length)") }
                let (lines, samples, components) = (u16(offset + 5), u16(offset + 7), Int(bytes[offset + 9]))
                guard lines == rows, samples == columns, components == samplesPerPixel else {
                    throw fail(
                        "the frame header declares \(samples) × \(lines) with \(components) component(s), "
                            + "but the image is \(columns) × \(rows) with \(samplesPerPixel)")
                }
                break header
            default:
                throw fail(String(format: "marker FF %02X at byte %d before the frame header (SOFn)", marker, offset))
            }
        }
        var scans = 0
        for i in offset..<(bytes.count - 1) where bytes[i] == 0xFF && bytes[i + 1] == 0xDA { scans += 1 }
        guard scans <= Self.maximumJPEGScans else {
            throw fail("\(scans) scans, more than the \(Self.maximumJPEGScans) any encoder writes")
        }
    }

    /// Replays DCMTK 3.6.7's marker walk (`scanJpegDataForBitDepth`) over one fragment: the offset of the
    /// `FF 01` it would loop on, or nil when it ends (at a frame header, an unknown marker or the end).
    static func dcmtkBitDepthWalkLoops(_ bytes: [UInt8]) -> Int? {
        var offset = 0
        while offset + 4 < bytes.count {
            guard bytes[offset] == 0xFF else { return nil }
            let marker = bytes[offset + 1]
            switch marker {
            case 0xFF: offset += 1
            case 0x01: return offset
            case 0xD0...0xD9, 0x03...0xBF: offset += 2
            case 0xC4, 0xC8, 0xCC, 0xDA...0xDF, 0xE0...0xFE:
                offset += 2 + (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
            default: return nil  // SOFn (DCMTK reads the depth and stops) or a marker it refuses
            }
        }
        return nil
    }
}

// MARK: - JPEG 2000 (OpenJPEG)

extension DICOMFile {
    /// Marker segments OpenJPEG reads in JPEG 2000 main and tile-part headers (ISO/IEC 15444-1 Table A.2, the
    /// Part 2 multi-component markers, and HTJ2K's CAP and CPF of 15444-15).
    static let jpeg2000HeaderMarkers: Set<UInt8> = [
        0x50, 0x51, 0x52, 0x53, 0x55, 0x57, 0x58, 0x59, 0x5C, 0x5D, 0x5E, 0x5F, 0x60, 0x61, 0x63, 0x64,
        0x74, 0x75, 0x77, 0x78
    ]

    /// Checks a JPEG 2000 codestream's structure before OpenJPEG sees it: SOC then SIZ; in the main header and in
    /// every tile-part header only known marker segments, each inside the codestream; tile-parts found where the
    /// previous one's length (Psot) says. OpenJPEG 2.5.0 skips an unknown marker by scanning for the next known
    /// one and then wrote past a buffer (SIGSEGV with two decoding threads, a heap over-read under ASan,
    /// `j2k-unknown-marker-main-header.dcm`, issue #23's 10-minute campaign).
    ///
    /// - Throws: `DICOMError.decodeFailed` naming the frame, the marker and its byte offset.
    func validateJPEG2000Codestream(_ bytes: [UInt8], frame: Int) throws {
        func fail(_ reason: String) -> DICOMError {
            .decodeFailed(file: path, frame: frame, reason: "malformed JPEG 2000 codestream: \(reason)")
        }
        func u16(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }
        func u32(_ at: Int) -> Int { u16(at) << 16 | u16(at + 2) }
        guard bytes.count >= 4, u16(0) == 0xFF4F, u16(2) == 0xFF51 else {
            throw fail("it does not start with SOC and SIZ (FF 4F FF 51)")
        }
        // The image size and components (SIZ: Xsiz − XOsiz, Ysiz − YOsiz, Csiz) must be the dataset's before
        // anything is decoded: OpenJPEG decodes whatever size a 3 KB codestream declares (256 × 720,896: 2.6 s
        // and 770 MB before the size was compared afterwards, `j2k-declared-size-larger-than-image.dcm`).
        guard bytes.count >= 42 else { throw fail("its SIZ segment is cut off") }
        let (width, height) = (u32(8) - u32(16), u32(12) - u32(20))
        let components = u16(40)
        guard width == columns, height == rows, components == samplesPerPixel else {
            throw fail(
                "SIZ declares \(width) × \(height) with \(components) component(s), but the image is "
                    + "\(columns) × \(rows) with \(samplesPerPixel)")
        }
        /// Walks the marker segments from `start` up to the marker `end` (SOT or SOD); returns its offset.
        func segments(from start: Int, until end: UInt8, in header: String) throws -> Int {
            var offset = start
            while true {
                guard offset + 4 <= bytes.count, bytes[offset] == 0xFF else {
                    throw fail("the \(header) ends at byte \(offset) without a marker")
                }
                let marker = bytes[offset + 1]
                if marker == end { return offset }
                guard Self.jpeg2000HeaderMarkers.contains(marker) else {
                    throw fail(String(format: "unknown marker FF %02X at byte %d in the %@", marker, offset, header))
                }
                let length = u16(offset + 2)
                guard length >= 2, offset + 2 + length <= bytes.count else {
                    throw fail(
                        String(
                            format: "marker FF %02X at byte %d has length %d, past the codestream's %d bytes",
                            marker, offset, length, bytes.count))
                }
                offset += 2 + length
            }
        }
        var sot = try segments(from: 2, until: 0x90, in: "main header")
        while sot + 1 < bytes.count, u16(sot) == 0xFF90 {
            guard sot + 12 <= bytes.count, u16(sot + 2) == 10 else {
                throw fail("the tile-part header (SOT) at byte \(sot) is cut off or not 10 bytes long")
            }
            let tilePartLength = u32(sot + 6)
            _ = try segments(from: sot + 12, until: 0x93, in: "tile-part header at byte \(sot)")
            guard tilePartLength != 0 else { return }  // the last tile-part runs to EOC
            guard tilePartLength >= 14, sot + tilePartLength <= bytes.count else {
                throw fail(
                    "the tile-part at byte \(sot) claims \(tilePartLength) bytes, past the codestream's "
                        + "\(bytes.count)")
            }
            sot += tilePartLength
        }
    }
}
