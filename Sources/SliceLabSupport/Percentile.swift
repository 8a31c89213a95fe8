/// Percentiles as numpy computes them by default (`numpy.percentile(a, q)`, `method="linear"`, with `_lerp`'s
/// rounding): the one rule for every percentile in SliceLab (window levels, intensity normalisation, dataset
/// fingerprints, overlays, statistics over cases).
public enum Percentile {
    /// The `q`-th percentile (0...100) of `sorted` (ascending, no NaN); NaN when it is empty.
    @inlinable
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
        let count = values.count
        let ranks = qs.map { q -> (Int, Int) in
            let lower = min(max(0, Int((q / 100 * Double(count - 1)).rounded(.down))), count - 1)
            return (lower, min(lower + 1, count - 1))
        }
        var selected: [Int: T] = [:]
        var buffer = values
        buffer.withUnsafeMutableBufferPointer { a in
            var start = 0
            for rank in Set(ranks.flatMap { [$0.0, $0.1] }).sorted() {
                select(rank, in: a, from: start)
                selected[rank] = a[rank]
                start = rank + 1
            }
        }
        return zip(qs, ranks).map { q, rank in
            // `ofSorted` reads only these two ranks.
            ofSorted(Interpolated(count: count, ranks: rank, values: (selected[rank.0]!, selected[rank.1]!)), q)
        }
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

    /// A view of `count` sorted values holding only the two at `ranks` (what `ofSorted` reads).
    @usableFromInline
    struct Interpolated<T: BinaryFloatingPoint>: RandomAccessCollection {
        @usableFromInline let count: Int
        @usableFromInline let ranks: (Int, Int)
        @usableFromInline let values: (T, T)
        @inlinable init(count: Int, ranks: (Int, Int), values: (T, T)) {
            (self.count, self.ranks, self.values) = (count, ranks, values)
        }
        @inlinable var startIndex: Int { 0 }
        @inlinable var endIndex: Int { count }
        @inlinable subscript(position: Int) -> T { position == ranks.0 ? values.0 : values.1 }
    }
}
