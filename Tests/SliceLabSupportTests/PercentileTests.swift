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

    /// Percentiles by selection equal those of the sorted values exactly (`ofSorted`, which the numpy goldens above
    /// hold), on sizes 1 to 5 000 with few or many distinct values, runs of one value, and the ranks at both ends;
    /// NaN sorts last, as in numpy's sort (seed 20261207).
    @Test func selectionEqualsTheSortedValues() {
        var generator = SeededGenerator(seed: 20_261_207)
        let qs = [0, 0.5, 1, 25, 50, 62.5, 99, 99.5, 100]
        for count in [1, 2, 3, 7, 64, 1000, 5000] {
            for distinct in [1, 3, count] {
                let values = (0..<count).map { _ in Float(Int.random(in: 0..<distinct, using: &generator)) * 0.37 - 4 }
                let sorted = values.sorted()
                #expect(
                    Percentile.of(values, qs) == qs.map { Percentile.ofSorted(sorted, $0) }, "\(count), \(distinct)")
            }
        }
        let ascending = (0..<100).map(Double.init)
        #expect(Percentile.of(Array(ascending.reversed()), [0, 50, 100]) == [0, 49.5, 99])
        #expect(Percentile.of([3, .nan, 1, 2], [0, 50]).elementsEqual([1, 2.5]))
        #expect(Percentile.of([3, .nan, 1, 2], [100])[0].isNaN)
        #expect(Percentile.of([Float](), [10, 90]).allSatisfy { $0.isNaN })
    }
}
