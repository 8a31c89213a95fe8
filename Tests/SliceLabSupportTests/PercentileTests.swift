import SliceLabSupport
import Testing

/// The one percentile rule against numpy 1.26.4's `numpy.percentile` (default `method="linear"`), the values
/// printed by `np.percentile(np.array(values), q)`; Float inputs are computed in Double, as numpy promotes.
struct PercentileTests {
    @Test func percentileMatchesNumpyLinear() {
        let values = [0.1, 0.7, 0.3, 1e9, -2.5, 0.3, 7.25, 0.1]
        let numpy: [(Double, Double)] = [
            (0, -2.5), (0.5, -2.409), (1, -2.318), (25, 0.1), (50, 0.3), (62.5, 0.44999999999999996),
            (75, 2.3375), (99, 930000000.5074997), (99.5, 965000000.2537498), (100, 1e9)
        ]
        for (q, expected) in numpy {
            let value = Percentile.of(values, q)
            #expect(abs(value - expected) <= 1e-15 * max(1, abs(expected)), "q \(q): \(value) against \(expected)")
        }
        for (q, expected) in [(0.5, 1.01), (33.3, 1.666), (99.5, 2.99)] {
            let value = Percentile.of([Float(3), 1, 2], q)
            #expect(abs(value - expected) <= 1e-12, "Float q \(q): \(value) against \(expected)")
        }
        #expect(Percentile.of([Double](), 50).isNaN)
        #expect(Percentile.ofSorted([4.0][...], 99) == 4)
    }
}
