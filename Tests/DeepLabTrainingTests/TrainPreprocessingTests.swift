import DeepLab
import Foundation
import TestSupport
import Testing

/// Preprocessing values: the JSON forms of dataset.json round-trip, and the normalizations match numpy.
struct TrainPreprocessingTests {
    @Test func jsonFormsRoundTrip() throws {
        for value in [
            Preprocessing.none, .window(center: 40, width: 400), .percentile(low: 1, high: 99), .zScore,
            .minMax
        ] {
            let decoded = try JSONDecoder().decode(Preprocessing.self, from: Data(value.json.utf8))
            #expect(decoded == value)
        }
    }

    @Test func windowClipsAndScalesToUnitRange() {
        var values: [Float] = [-1000, -160, 40, 240, 3000]
        Preprocessing.window(center: 40, width: 400).apply(to: &values)
        #expect(values == [0, 0, 0.5, 1, 1])
    }

    /// Against numpy.percentile (linear) and numpy's mean/std: agreement within 1e-6.
    @Test func percentileAndZScoreMatchNumpy() throws {
        let values = (0..<101).map { Float(($0 * 37) % 101) * 0.5 - 3 }
        let script = """
            import numpy as np, sys
            v = np.array([float(x) for x in sys.argv[1].split(',')], dtype=np.float64)
            lo, hi = np.percentile(v, 2.5), np.percentile(v, 97.5)
            p = (np.clip(v, lo, hi) - lo) / (hi - lo)
            z = (v - v.mean()) / v.std()
            print(','.join(repr(float(x)) for x in np.concatenate([p, z])))
            """
        let output = try TestSupport.runPython(script, arguments: [values.map { "\($0)" }.joined(separator: ",")])
        let expected = output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap {
            Double($0)
        }
        var percentile = values
        var zScore = values
        Preprocessing.percentile(low: 2.5, high: 97.5).apply(to: &percentile)
        Preprocessing.zScore.apply(to: &zScore)
        let actual = (percentile + zScore).map(Double.init)
        #expect(expected.count == actual.count)
        #expect(zip(actual, expected).allSatisfy { abs($0 - $1) <= 1e-6 * max(1, abs($1)) })
    }
}
