import Foundation

/// SliceLab's one seeded random number generator: xoshiro256** (Blackman & Vigna, "Scrambled linear
/// pseudorandom number generators", 2021), its state filled by SplitMix64 from the seed.
///
/// Every random choice (k-means restarts, bootstrap resamples, weight initialisation, augmentation, dropout)
/// takes one of these, so a run is repeated by repeating its recorded seed. Its whole state is four words,
/// which checkpoints store so a resumed run draws the same numbers as an uninterrupted one.
public struct SeededGenerator: RandomNumberGenerator, Equatable, Sendable {
    private var s0, s1, s2, s3: UInt64

    /// A generator seeded from `seed` (any value, including 0).
    public init(seed: UInt64) {
        var mixer = seed
        func next() -> UInt64 {
            mixer &+= 0x9E37_79B9_7F4A_7C15
            var z = mixer
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        (s0, s1, s2, s3) = (next(), next(), next(), next())
    }

    /// A generator continuing from a stored `state`; nil unless it holds four words, not all zero.
    public init?(state: [UInt64]) {
        guard state.count == 4, state.contains(where: { $0 != 0 }) else { return nil }
        (s0, s1, s2, s3) = (state[0], state[1], state[2], state[3])
    }

    /// The generator's state (four words, never all zero), for storing.
    public var state: [UInt64] { [s0, s1, s2, s3] }

    /// A generator for stream `index` (a restart, a layer) of a run seeded with `seed`, independent of the
    /// others.
    public static func stream(seed: Int, index: Int) -> SeededGenerator {
        SeededGenerator(seed: UInt64(bitPattern: Int64(seed)) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index) &+ 1)
    }

    public mutating func next() -> UInt64 {
        let result = rotate(s1 &* 5, 7) &* 9
        let shifted = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= shifted
        s3 = rotate(s3, 45)
        return result
    }

    /// A uniform double in [0, 1) with 53 random bits.
    public mutating func uniform() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// A uniform double in `range`.
    public mutating func uniform(_ range: ClosedRange<Double>) -> Double {
        range.lowerBound + (range.upperBound - range.lowerBound) * uniform()
    }

    /// True with probability `probability`.
    public mutating func bernoulli(_ probability: Double) -> Bool {
        uniform() < probability
    }

    /// A standard normal draw (Box–Muller; one draw per call so the four words stay the only state).
    public mutating func normal() -> Double {
        let u1 = 1 - uniform()  // (0, 1]
        let u2 = uniform()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    /// A uniform integer in `0..<upperBound`, without modulo bias.
    public mutating func index(below upperBound: Int) -> Int {
        precondition(upperBound > 0)
        return Int.random(in: 0..<upperBound, using: &self)
    }

    private func rotate(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
}
