import DeepLab
import Foundation

/// The trainer's seeded random number generator: xoshiro256** (Blackman and Vigna, 2018) seeded through
/// SplitMix64. Its whole state is four words, stored in checkpoints so a resumed run draws the same numbers as
/// an uninterrupted one.
public struct TrainingRandom: RandomNumberGenerator, Codable, Equatable, Sendable {
    /// The generator's state (never all zero).
    public private(set) var state: [UInt64]

    /// A generator seeded from `seed` (any value, including 0).
    public init(seed: UInt64) {
        var mixer = seed
        state = (0..<4).map { _ in
            mixer &+= 0x9E37_79B9_7F4A_7C15
            var z = mixer
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// A generator continuing from a stored state.
    ///
    /// - Throws: `TrainingError.invalidConfiguration` unless `state` holds four words, not all zero.
    public init(state: [UInt64]) throws {
        guard state.count == 4, state.contains(where: { $0 != 0 }) else {
            throw TrainingError.invalidConfiguration("a random-generator state needs four words, not all zero")
        }
        self.state = state
    }

    public mutating func next() -> UInt64 {
        let result = rotate(state[1] &* 5, 7) &* 9
        let t = state[1] << 17
        state[2] ^= state[0]
        state[3] ^= state[1]
        state[1] ^= state[2]
        state[0] ^= state[3]
        state[2] ^= t
        state[3] = rotate(state[3], 45)
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

    /// A standard normal draw (Box–Muller; one draw per call so the state stays the only state).
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
