import SliceLabSupport
import Testing

@testable import Metrics

/// The linear-time transform equals brute force on random anisotropic grids.
@Suite struct DistanceTransformTests {
    static func bruteForce(_ features: [Bool], _ shape: [Int], _ spacing: [Double]) -> [Double] {
        let extents = shape.count == 3 ? shape : [1] + shape
        let steps = spacing.count == 3 ? spacing : [1] + spacing
        func coordinates(_ i: Int) -> [Int] {
            [i / (extents[1] * extents[2]), (i / extents[2]) % extents[1], i % extents[2]]
        }
        let points = features.indices.filter { features[$0] }.map(coordinates)
        return features.indices.map { i in
            let p = coordinates(i)
            return points.map { q in
                (0..<3).reduce(0.0) { sum, a in
                    let d = Double(p[a] - q[a]) * steps[a]
                    return sum + d * d
                }
            }.min() ?? .infinity
        }
    }

    @Test(arguments: [
        ([9, 13], [0.7, 1.3]), ([5, 7, 11], [2.5, 0.8, 0.8]), ([6, 4, 9], [0.5, 1.7, 1.1]),
        ([1, 17], [1, 1]), ([40, 3], [0.3, 2.0])
    ])
    func squaredDistancesEqualBruteForce(shape: [Int], spacing: [Double]) {
        var generator = SeededGenerator(seed: 7)
        for density in [0.02, 0.2, 0.7] {
            let count = shape.reduce(1, *)
            let features = (0..<count).map { _ in Double(generator.next() % 10_000) / 10_000 < density }
            let fast = DistanceTransform.squaredDistances(features: features, shape: shape, spacing: spacing)
            let slow = Self.bruteForce(features, shape, spacing)
            for i in 0..<count {
                #expect(
                    agree(fast[i], slow[i], 1e-9 * max(1, slow[i])), "\(shape) voxel \(i): \(fast[i]) vs \(slow[i])")
            }
        }
    }

    @Test func noFeatureGivesInfinity() {
        let d = DistanceTransform.squaredDistances(
            features: [Bool](repeating: false, count: 24), shape: [2, 3, 4],
            spacing: [1, 1, 1])
        #expect(d.allSatisfy { $0 == .infinity })
    }

    @Test func largeVolumeAcrossWorkersEqualsBruteForceOnSamples() {
        let shape = [20, 64, 70]
        let spacing = [2.5, 0.8, 0.8]
        var features = [Bool](repeating: false, count: shape.reduce(1, *))
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<25 { features[generator.index(below: features.count)] = true }
        let fast = DistanceTransform.squaredDistances(features: features, shape: shape, spacing: spacing)
        let slow = Self.bruteForce(features, shape, spacing)
        for i in stride(from: 0, to: features.count, by: 97) {
            #expect(agree(fast[i], slow[i], 1e-9 * max(1, slow[i])))
        }
    }
}
