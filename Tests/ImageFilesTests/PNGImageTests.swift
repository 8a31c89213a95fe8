import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

@Suite struct PNGImageTests {
    @Test(arguments: [1, 2, 3, 4])
    func eightBitRoundTripKeepsEverySample(channels: Int) throws {
        let folder = try TestSupport.temporaryFolder()
        let samples = (0..<(7 * 5 * channels)).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
        let image = try PNGImage(rows: 7, columns: 5, channels: channels, samples: samples)
        let path = folder.appendingPathComponent("a.png").path
        try image.write(to: path)
        #expect(try PNGImage.read(path) == image)
    }

    @Test(arguments: [1, 3, 4])
    func sixteenBitRoundTripKeepsEverySample(channels: Int) throws {
        let folder = try TestSupport.temporaryFolder()
        let samples = (0..<(4 * 9 * channels)).map { UInt16(truncatingIfNeeded: $0 * 4099 + 257) }
        let image = try PNGImage(rows: 4, columns: 9, channels: channels, samples: samples)
        let path = folder.appendingPathComponent("b.png").path
        try image.write(to: path)
        let back = try PNGImage.read(path)
        #expect(back == image)
        #expect(back.bitDepth == 16)
    }

    @Test func paletteAndGrayAlphaWrittenByNumpyPeerAreExpanded() throws {
        let folder = try TestSupport.temporaryFolder()
        // A palette PNG and a low-bit-depth gray PNG, written byte by byte with zlib so the test needs no imaging peer.
        let script = """
            import struct, zlib, sys
            def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
            def png(path, w, h, depth, ctype, rows, extra=b''):
                raw = b''.join(b'\\x00' + r for r in rows)
                data = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, 0))
                data += extra + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
                open(path, 'wb').write(data)
            d = sys.argv[1]
            plte = chunk(b'PLTE', bytes([255, 0, 0, 0, 255, 0, 0, 0, 255]))
            png(d + '/pal.png', 3, 1, 8, 3, [bytes([0, 1, 2])], plte)
            png(d + '/gray4.png', 2, 1, 4, 0, [bytes([0x0f])])
            """
        try TestSupport.runPython(script, arguments: [folder.path])
        let palette = try PNGImage.read(folder.appendingPathComponent("pal.png").path)
        #expect(palette.channels == 3)
        #expect(palette.intSamples == [255, 0, 0, 0, 255, 0, 0, 0, 255])
        let gray = try PNGImage.read(folder.appendingPathComponent("gray4.png").path)
        #expect(gray.channels == 1)
        #expect(gray.intSamples == [0, 255])
    }

    @Test func notAPNGIsAClearError() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("x.png").path
        try Data("hello, this is text".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: ImageFileError.unreadable(file: path, reason: "not a PNG file (bad signature)")) {
            try PNGImage.read(path)
        }
        let missing = folder.appendingPathComponent("missing.png").path
        #expect(throws: ImageFileError.unreadable(file: missing, reason: "cannot open file")) {
            try PNGImage.read(missing)
        }
    }

    @Test func truncatedPNGIsAClearErrorNamingTheFile() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("t.png").path
        let samples = (0..<(64 * 64)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
        try PNGImage(rows: 64, columns: 64, channels: 1, samples: samples).write(to: path)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        for cut in [20, 40, data.count / 2, data.count - 13] {
            try data.prefix(cut).write(to: URL(fileURLWithPath: path))
            do {
                _ = try PNGImage.read(path)
                Issue.record("a PNG cut at \(cut) of \(data.count) bytes was read")
            } catch let error as ImageFileError {
                guard case .unreadable(let file, let reason) = error else {
                    Issue.record("unexpected \(error)")
                    continue
                }
                #expect(file == path)
                #expect(!reason.isEmpty)
            }
        }
    }

    @Test func oversizedHeaderIsRefusedBeforeAllocating() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("big.png").path
        let script = """
            import struct, zlib, sys
            def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
            hdr = chunk(b'IHDR', struct.pack('>IIBBBBB', 1000000, 1000000, 8, 0, 0, 0, 0))
            open(sys.argv[1], 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + hdr + chunk(b'IDAT', zlib.compress(b'\\x00' * 10)) + chunk(b'IEND', b''))
            """
        try TestSupport.runPython(script, arguments: [path])
        #expect(throws: ImageFileError.self) { try PNGImage.read(path) }
        do {
            _ = try PNGImage.read(path)
        } catch let ImageFileError.tooLarge(file, reason) {
            #expect(file == path)
            #expect(reason.contains("limit"))
        }
    }

    @Test func failedWriteLeavesThePreviousFileIntact() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("keep.png").path
        let first = try PNGImage(rows: 2, columns: 2, channels: 1, samples: [UInt8]([1, 2, 3, 4]))
        try first.write(to: path)
        #expect(throws: ImageFileError.self) {
            try writeAtomically(to: path) { temporary in
                try Data([1, 2, 3]).write(to: URL(fileURLWithPath: temporary))
                throw ImageFileError.unwritable(file: path, reason: "injected failure")
            }
        }
        #expect(try PNGImage.read(path) == first)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(leftovers == ["keep.png"])
    }
}
