/// Percentiles as numpy computes them by default (`numpy.percentile(a, q)`, `method="linear"`, with `_lerp`'s
/// rounding): the one rule for every percentile in SliceLab (window levels, intensity normalisation, dataset
/// fingerprints, overlays, statistics over cases).
public enum Percentile {
    /// The `q`-th percentile (0...100) of `sorted` (ascending, no NaN); NaN when it is empty.
    @inlinable
    public static func ofSorted<C: RandomAccessCollection>(_ sorted: C, _ q: Double) -> Double
    where C.Element: BinaryFloatingPoint, C.Index == Int {
        guard !sorted.isEmpty else { return .nan }
        let (lower, upper, t) = ranks(q, count: sorted.count)
        return interpolated(Double(sorted[sorted.startIndex + lower]), Double(sorted[sorted.startIndex + upper]), t)
    }

    /// The `q`-th percentile of `values` in any order (no NaN); NaN when there are none.
    public static func of<T: BinaryFloatingPoint>(_ values: [T], _ q: Double) -> Double {
        of(values, [q])[0]
    }

    /// The `qs`-th percentiles of `values` in any order, each what `ofSorted` gives on the values sorted, without
    /// sorting them: only the two ranks each percentile interpolates between are selected (Hoare's quickselect,
    /// each from where the previous left off), O(n) expected against O(n log n). NaN sorts last, as numpy sorts
    /// it; NaN results when there are no values. Per-image percentile normalisation sorted 800 000 values a slice
    /// of a 468 × 576 volume's 3-slice inputs on the thread that feeds the network (Benchmarks/README.md).
    @inlinable  // specialised in the caller's module (see `select`)
    public static func of<T: BinaryFloatingPoint>(_ values: [T], _ qs: [Double]) -> [Double] {
        guard !values.isEmpty else { return qs.map { _ in .nan } }
        let positions = qs.map { ranks($0, count: values.count) }
        var buffer = values
        return buffer.withUnsafeMutableBufferPointer { a in
            // Ascending: each selection leaves the ranks before its start where earlier ones put them.
            var start = 0
            for rank in Set(positions.flatMap { [$0.lower, $0.upper] }).sorted() {
                select(rank, in: a, from: start)
                start = rank + 1
            }
            return positions.map { interpolated(Double(a[$0.lower]), Double(a[$0.upper]), $0.t) }
        }
    }

    /// The ranks of the sorted values the `q`-th percentile of `count` values interpolates between, and the weight
    /// of the upper one.
    @inlinable
    static func ranks(_ q: Double, count: Int) -> (lower: Int, upper: Int, t: Double) {
        let position = q / 100 * Double(count - 1)
        let lower = min(max(0, Int(position.rounded(.down))), count - 1)
        return (lower, min(lower + 1, count - 1), position - Double(lower))
    }

    /// numpy's `_lerp` between `a` and `b` at `t`: a + d·t, but b − d·(1 − t) when t ≥ 0.5.
    @inlinable
    static func interpolated(_ a: Double, _ b: Double, _ t: Double) -> Double {
        if a == b || t == 0 { return a }
        let difference = b - a
        return t >= 0.5 ? b - difference * (1 - t) : a + difference * t
    }

    /// Puts the `rank`-th smallest of `a[start...]` at `rank`, the smaller ones before it and the larger after it
    /// (NaN largest). Everything before `start` must be no larger than everything from it on.
    @inlinable
    static func select<T: BinaryFloatingPoint>(
        _ rank: Int, in a: UnsafeMutableBufferPointer<T>, from start: Int
    ) {
        func less(_ x: T, _ y: T) -> Bool { x < y || (y.isNaN && !x.isNaN) }
        var (low, high) = (start, a.count - 1)
        while low < high {
            // The median of the first, middle and last as the pivot: it is in the range, so both scans stop.
            let middle = low + (high - low) / 2
            if less(a[middle], a[low]) { a.swapAt(middle, low) }
            if less(a[high], a[low]) { a.swapAt(high, low) }
            if less(a[high], a[middle]) { a.swapAt(high, middle) }
            let pivot = a[middle]
            var (i, j) = (low, high)
            while i <= j {
                while less(a[i], pivot) { i += 1 }
                while less(pivot, a[j]) { j -= 1 }
                if i <= j {
                    a.swapAt(i, j)
                    (i, j) = (i + 1, j - 1)
                }
            }
            // a[low...j] ≤ pivot ≤ a[i...high], and whatever lies between i and j equals the pivot.
            if rank <= j {
                high = j
            } else if rank >= i {
                low = i
            } else {
                return
            }
        }
    }
}
