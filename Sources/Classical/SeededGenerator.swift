/// A seeded, reproducible random number generator (xoshiro256**, state filled by SplitMix64 from the seed).
///
/// Every random choice in `Classical` takes one of these, so a run is repeated by repeating its seed.
/// Reference: Blackman & Vigna, "Scrambled linear pseudorandom number generators" (2021).
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    public init(seed: UInt64) {
        var splitMix = seed
        func next() -> UInt64 {
            splitMix &+= 0x9E37_79B9_7F4A_7C15
            var z = splitMix
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        state = (next(), next(), next(), next())
    }

    public mutating func next() -> UInt64 {
        let result = ((state.1 &* 5) << 7 | (state.1 &* 5) >> 57) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = state.3 << 45 | state.3 >> 19
        return result
    }

    /// A uniform double in [0, 1) with 53 random bits.
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// A generator for restart `index` of a run seeded with `seed`, independent of the others.
    public static func stream(seed: Int, index: Int) -> SeededGenerator {
        SeededGenerator(seed: UInt64(bitPattern: Int64(seed)) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index) &+ 1)
    }
}
