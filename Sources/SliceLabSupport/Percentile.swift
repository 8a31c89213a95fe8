/// Percentiles as numpy computes them by default (`numpy.percentile(a, q)`, `method="linear"`, with `_lerp`'s
/// rounding): the one rule for every percentile in SliceLab (window levels, intensity normalisation, dataset
/// fingerprints, overlays, statistics over cases).
public enum Percentile {
    /// The `q`-th percentile (0...100) of `sorted` (ascending, no NaN); NaN when it is empty.
    public static func ofSorted<C: RandomAccessCollection>(_ sorted: C, _ q: Double) -> Double
    where C.Element: BinaryFloatingPoint, C.Index == Int {
        guard !sorted.isEmpty else { return .nan }
        let first = sorted.startIndex
        let count = sorted.count
        let position = q / 100 * Double(count - 1)
        let lower = min(max(0, Int(position.rounded(.down))), count - 1)
        let upper = min(lower + 1, count - 1)
        let t = position - Double(lower)
        let a = Double(sorted[first + lower])
        let b = Double(sorted[first + upper])
        if a == b || t == 0 { return a }
        // numpy's `_lerp`: a + d·t, but b − d·(1 − t) when t ≥ 0.5.
        let difference = b - a
        return t >= 0.5 ? b - difference * (1 - t) : a + difference * t
    }

    /// The `q`-th percentile of `values` in any order (no NaN); NaN when there are none.
    public static func of<T: BinaryFloatingPoint>(_ values: [T], _ q: Double) -> Double {
        ofSorted(values.sorted(), q)
    }
}
