import Foundation

// MARK: - Checks of compressed frames before DCMTK's decoders see them
//
// DCMTK 3.6.7 decodes RLE and JPEG frames one at a time (`DcmPixelData::getUncompressedFrame`) without some of the
// checks its whole-object path makes: a bad RLE segment offset is followed out of its fragment (SIGSEGV), and
// some JPEG marker sequences make its IJG decoders loop forever. Each frame's bytes are checked here first and
// refused with a typed error that names the file, the frame and the cause.

extension DicomFile {
    /// Checks the RLE header of one frame (PS3.5 Annex G.4): 16 little-endian 32-bit values, the number of
    /// segments (1–15, one per byte of each sample: samples per pixel × bits allocated / 8), then each
    /// segment's offset from the start of the frame: the first 64, increasing, every one inside the frame.
    ///
    /// - Throws: `DICOMError.decodeFailed` naming the frame and the bad value.
    func validateRLEFrame(_ bytes: [UInt8], frame: Int) throws {
        func fail(_ reason: String) -> DICOMError {
            .decodeFailed(file: path, frame: frame, reason: "malformed RLE header: \(reason)")
        }
        guard bytes.count >= 64 else { throw fail("the frame holds \(bytes.count) bytes, less than its 64-byte header") }
        func word(_ i: Int) -> Int {
            Int(bytes[4 * i]) | Int(bytes[4 * i + 1]) << 8 | Int(bytes[4 * i + 2]) << 16 | Int(bytes[4 * i + 3]) << 24
        }
        let segments = word(0)
        let expected = samplesPerPixel * max(bitsAllocated / 8, 1)
        guard (1...15).contains(segments), segments == expected else {
            throw fail("\(segments) segments, but \(samplesPerPixel) sample(s) of \(bitsAllocated) bits need \(expected)")
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
