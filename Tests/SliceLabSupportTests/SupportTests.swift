import Foundation
import SliceLabSupport
import Testing

@Suite struct SeededGeneratorTests {
    /// xoshiro256** as its authors publish it (state filled by SplitMix64), transcribed independently of the
    /// generator: a check that the one generator is the published algorithm, not merely self-consistent.
    static func reference(seed: UInt64, count: Int) -> [UInt64] {
        var x = seed
        var s = (0..<4).map { _ -> UInt64 in
            x = x &+ 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        func rotl(_ v: UInt64, _ k: UInt64) -> UInt64 { (v << k) | (v >> (64 - k)) }
        return (0..<count).map { _ in
            let result = rotl(s[1] &* 5, 7) &* 9
            let t = s[1] << 17
            s[2] ^= s[0]
            s[3] ^= s[1]
            s[1] ^= s[2]
            s[0] ^= s[3]
            s[2] ^= t
            s[3] = rotl(s[3], 45)
            return result
        }
    }

    @Test(arguments: [UInt64(0), 1, 42, .max])
    func drawsThePublishedXoshiroSequence(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        #expect((0..<64).map { _ in generator.next() } == Self.reference(seed: seed, count: 64))
    }

    @Test func aStoredStateContinuesTheSameStream() throws {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<10 { _ = generator.next() }
        var resumed = try #require(SeededGenerator(state: generator.state))
        #expect((0..<20).map { _ in generator.next() } == (0..<20).map { _ in resumed.next() })
        #expect(SeededGenerator(state: [0, 0, 0, 0]) == nil && SeededGenerator(state: [1, 2]) == nil)
    }

    @Test func streamsOfOneSeedDiffer() {
        var first = SeededGenerator.stream(seed: 3, index: 0)
        var second = SeededGenerator.stream(seed: 3, index: 1)
        #expect(first.next() != second.next())
        var draws = SeededGenerator(seed: 9)
        let values = (0..<10_000).map { _ in draws.index(below: 10) }
        #expect(Set(values) == Set(0..<10) && values.allSatisfy { (0..<10).contains($0) })
    }
}

@Suite struct ParallelTests {
    @Test(arguments: [0, 1, 4095, 4096, 100_000, 1_000_000])
    func chunksCoverEveryIndexOnceInOrder(count: Int) {
        let chunks = Parallel.chunkCount(count)
        var ranges = [Range<Int>](repeating: 0..<0, count: chunks)
        ranges.withUnsafeMutableBufferPointer { slots in
            let output = slots
            Parallel.forEachChunk(count) { chunk, range in output[chunk] = range }
        }
        #expect(ranges.first?.lowerBound == 0 && ranges.last?.upperBound == count)
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
    }
}

@Suite struct ReadLimitsTests {
    @Test func sizesParseInBinaryUnits() {
        #expect(ReadLimits(parsing: "4G")?.maxBytes == 4 << 30)
        #expect(ReadLimits(parsing: "1.5GiB")?.maxBytes == 3 << 29)
        #expect(ReadLimits(parsing: "512mb")?.maxBytes == 512 << 20)
        #expect(ReadLimits(parsing: "1000000")?.maxBytes == 1_000_000)
        #expect(
            ReadLimits(parsing: "lots") == nil && ReadLimits(parsing: "-1G") == nil && ReadLimits(parsing: "") == nil)
    }

    @Test func anOverflowingClaimIsRefusedNamingFileAndLimit() {
        let limits = ReadLimits(maxBytes: 1 << 20)
        #expect(throws: Never.self) { try limits.check([512, 512], bytesPerValue: 4, file: "a.png", what: "x") }
        #expect(throws: ReadLimitError.self) {
            try limits.check([Int.max / 2, 3], bytesPerValue: 4, file: "b.png", what: "the image")
        }
        do {
            try limits.check([1024, 1024], bytesPerValue: 4, file: "c.dcm", what: "frame")
        } catch {
            #expect("\(error)".hasPrefix("c.dcm: refused: frame (1024 × 1024 values) would take 4 MiB"))
        }
    }

    @Test func gridShapesComeFromDimensions() {
        #expect(GridShape(dimensions: [3, 4]) == GridShape(rows: 3, columns: 4))
        #expect(GridShape(dimensions: [2, 3, 4])?.count == 24 && GridShape(dimensions: [1]) == nil)
        #expect(GridShape(rows: 0, columns: 3).isEmpty)
    }
}
