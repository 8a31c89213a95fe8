import SliceLabSupport

/// A permutohedral lattice over `pointCount` points with `dimension` features each: Gaussian filtering of values
/// attached to the points in time linear in the number of points (splat, blur along each lattice axis, slice).
///
/// Features are pre-scaled by the caller (position / width, intensity / width); the filter approximates
/// `out[i] = Σ_j exp(−|f_i − f_j|² / 2) in[j]`, including `j == i`, up to the lattice's constant factor.
/// The construction follows Krähenbühl's `Permutohedral` (the SSE path of pydensecrf: round to nearest, ties to
/// even; lattice vertices numbered in the order points first reach them; blur with weights ½, 1, ½; slice scaled
/// by 1 / (1 + 2⁻ᵈ)), so results agree with pydensecrf to float rounding.
/// Reference: Adams, Baek, Davis, "Fast High-Dimensional Filtering Using the Permutohedral Lattice",
/// Eurographics 2010.
public struct PermutohedralLattice: Sendable {
    /// d: the features per point.
    public let dimension: Int
    /// N: the points.
    public let pointCount: Int
    /// M: the lattice vertices the points touch.
    public let vertexCount: Int
    /// For point i and simplex corner r, the vertex number plus one (0 is the always-zero "outside" slot):
    /// `offsets[i × (d + 1) + r]`.
    private let offsets: [Int32]
    /// The barycentric weight of each (point, corner), laid out like `offsets`.
    private let weights: [Float]
    /// For blur axis j and vertex v, the two neighbours (plus one, 0 when absent):
    /// `neighbours[(j × M + v) × 2 + {0, 1}]`.
    private let neighbours: [Int32]
    /// The (point, corner) entries that splat onto each vertex, in point order (CSR over vertices), so that
    /// splatting is a gather that runs in parallel and sums in the same order as a sequential splat.
    private let splatStart: [Int32]
    /// The point and barycentric weight of each CSR entry.
    private let splatPoints: [Int32]
    private let splatWeights: [Float]

    /// Builds the lattice.
    ///
    /// - Parameters:
    ///   - features: point-major, `features[i × dimension + k]`, already divided by the kernel widths.
    ///   - dimension: d ≥ 1.
    /// - Precondition: `features.count == pointCount × dimension` for some pointCount ≥ 0.
    public init(features: [Float], dimension d: Int) {
        precondition(d >= 1 && features.count % d == 0, "features do not split into \(d)-vectors")
        let n = features.count / d
        (dimension, pointCount) = (d, n)
        let corners = d + 1
        let table = LatticeHashTable(keySize: d, expected: max(n, 8))
        var offsets = [Int32](repeating: 0, count: n * corners)
        var weights = [Float](repeating: 0, count: n * corners)

        // Scratch: canonical[r × (d + 1) + i], the coordinates of corner r of the canonical simplex; the point's
        // elevated position, nearest remainder-0 point, rank, barycentric weights and key.
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: 3 * corners + 1)
        let ints = UnsafeMutablePointer<Int>.allocate(capacity: corners * corners + corners)
        let key = UnsafeMutablePointer<Int16>.allocate(capacity: 3 * d)
        defer {
            scratch.deallocate()
            ints.deallocate()
            key.deallocate()
        }
        let (elevated, remainder0, barycentric) = (scratch, scratch + corners, scratch + 2 * corners)
        let (canonical, rank) = (ints, ints + corners * corners)
        for r in 0...d {
            for i in 0...d { canonical[r * corners + i] = i <= d - r ? r : r - corners }
        }
        let inverseStandardDeviation = Float((2.0 / 3.0).squareRoot() * Double(corners))
        let scale = (0..<d).map {
            Float(1.0 / Double(($0 + 2) * ($0 + 1)).squareRoot() * Double(inverseStandardDeviation))
        }
        let down = 1 / Float(corners), up = Float(corners)

        features.withUnsafeBufferPointer { features in
            offsets.withUnsafeMutableBufferPointer { offsets in
                weights.withUnsafeMutableBufferPointer { weights in
                    for point in 0..<n {
                        // Elevate onto the hyperplane Σ x = 0 in d + 1 dimensions.
                        var sum: Float = 0
                        for j in stride(from: d, to: 0, by: -1) {
                            let scaled = features[point * d + j - 1] * scale[j - 1]
                            elevated[j] = sum - Float(j) * scaled
                            sum += scaled
                        }
                        elevated[0] = sum
                        // The nearest remainder-0 point, then the simplex's permutation (rank).
                        var total: Float = 0
                        for i in 0...d {
                            let v = (down * elevated[i]).rounded(.toNearestOrEven)
                            remainder0[i] = v * up
                            total += v
                            rank[i] = 0
                        }
                        for i in 0..<d {
                            let di = elevated[i] - remainder0[i]
                            for j in (i + 1)...d {
                                if di < elevated[j] - remainder0[j] { rank[i] += 1 } else { rank[j] += 1 }
                            }
                        }
                        let shift = Int(total)
                        for i in 0...d {
                            rank[i] += shift
                            if rank[i] < 0 {
                                rank[i] += corners
                                remainder0[i] += up
                            } else if rank[i] >= corners {
                                rank[i] -= corners
                                remainder0[i] -= up
                            }
                        }
                        for i in 0...(d + 1) { barycentric[i] = 0 }
                        for i in 0...d {
                            let v = (elevated[i] - remainder0[i]) * down
                            barycentric[d - rank[i]] += v
                            barycentric[d - rank[i] + 1] -= v
                        }
                        barycentric[0] += 1 + barycentric[d + 1]
                        for r in 0...d {
                            for i in 0..<d {
                                let coordinate = Int(remainder0[i]) + canonical[r * corners + rank[i]]
                                key[i] = Int16(truncatingIfNeeded: coordinate)
                            }
                            offsets[point * corners + r] = Int32(table.find(key, create: true) + 1)
                            weights[point * corners + r] = barycentric[r]
                        }
                    }
                }
            }
        }

        let m = table.count
        vertexCount = m
        var neighbours = [Int32](repeating: 0, count: corners * m * 2)
        let (lower, upper) = (key + d, key + 2 * d)
        neighbours.withUnsafeMutableBufferPointer { neighbours in
            for j in 0...d {
                for vertex in 0..<m {
                    let vertexKey = table.key(vertex)
                    for k in 0..<d {
                        lower[k] = vertexKey[k] &- 1
                        upper[k] = vertexKey[k] &+ 1
                    }
                    if j < d {
                        lower[j] = vertexKey[j] &+ Int16(d)
                        upper[j] = vertexKey[j] &- Int16(d)
                    }
                    neighbours[(j * m + vertex) * 2] = Int32(table.find(lower, create: false) + 1)
                    neighbours[(j * m + vertex) * 2 + 1] = Int32(table.find(upper, create: false) + 1)
                }
            }
        }

        // Transpose (point, corner) → vertex for the gathering splat; entries stay in point order.
        var start = [Int32](repeating: 0, count: m + 2)
        for entry in offsets { start[Int(entry) + 1] += 1 }
        for v in 0...m { start[v + 1] += start[v] }
        var fill = start
        var points = [Int32](repeating: 0, count: offsets.count)
        var entryWeights = [Float](repeating: 0, count: offsets.count)
        for (index, entry) in offsets.enumerated() {
            points[Int(fill[Int(entry)])] = Int32(index / corners)
            entryWeights[Int(fill[Int(entry)])] = weights[index]
            fill[Int(entry)] += 1
        }
        (self.offsets, self.weights, self.neighbours) = (offsets, weights, neighbours)
        (splatStart, splatPoints, splatWeights) = (start, points, entryWeights)
    }

    /// Filters `valueCount` values per point (point-major, `input[i × valueCount + c]`).
    ///
    /// - Parameter reverse: blur the axes in reverse order (the transposed filter).
    /// - Returns: the filtered values, laid out like `input`.
    public func filter(_ input: [Float], valueCount: Int, reverse: Bool = false) -> [Float] {
        precondition(input.count == pointCount * valueCount, "values do not match the lattice's points")
        let d = dimension, corners = d + 1, m = vertexCount, width = valueCount
        var values = [Float](repeating: 0, count: (m + 1) * width)
        var scratch = [Float](repeating: 0, count: (m + 1) * width)
        // Splat (as a gather per vertex, in point order) into rows 1…M; row 0 stays the zero "outside" slot.
        input.withUnsafeBufferPointer { input in
            values.withUnsafeMutableBufferPointer { values in
                splatStart.withUnsafeBufferPointer { start in
                    Self.gather(rows: m, width: width, firstRow: 1,
                                entries: { Int(start[$0 + 1])..<Int(start[$0 + 2]) }, sources: splatPoints,
                                weights: splatWeights, scale: 1, from: input, into: values)
                }
            }
        }
        // Blur along each lattice axis.
        neighbours.withUnsafeBufferPointer { neighbours in
            for step in 0...d {
                let axis = reverse ? d - step : step
                values.withUnsafeBufferPointer { old in
                    scratch.withUnsafeMutableBufferPointer { new in
                        let new = new
                        Parallel.forEachChunk(m, minimumChunk: 2048) { _, range in
                            for vertex in range {
                                let here = (vertex + 1) * width
                                let first = Int(neighbours[(axis * m + vertex) * 2]) * width
                                let second = Int(neighbours[(axis * m + vertex) * 2 + 1]) * width
                                for c in 0..<width {
                                    new[here + c] = old[here + c] + 0.5 * (old[first + c] + old[second + c])
                                }
                            }
                        }
                    }
                }
                swap(&values, &scratch)
            }
        }
        // Slice.
        let alpha = 1 / (1 + Float(pow2(-d)))
        var output = [Float](repeating: 0, count: pointCount * width)
        values.withUnsafeBufferPointer { values in
            output.withUnsafeMutableBufferPointer { output in
                Self.gather(rows: pointCount, width: width, firstRow: 0,
                            entries: { ($0 * corners)..<(($0 + 1) * corners) }, sources: offsets, weights: weights,
                            scale: alpha, from: values, into: output)
            }
        }
        return output
    }
}

extension PermutohedralLattice {
    /// `target[firstRow + row] = Σ_{e ∈ entries(row)} (weights[e] × scale) × source[sources[e]]` for every row
    /// (rows of `width` values), rows split into chunks that run in parallel; each row sums in entry order.
    fileprivate static func gather(rows: Int, width: Int, firstRow: Int, entries: (Int) -> Range<Int>,
                                   sources: [Int32], weights: [Float], scale: Float,
                                   from source: UnsafeBufferPointer<Float>,
                                   into target: UnsafeMutableBufferPointer<Float>) {
        sources.withUnsafeBufferPointer { sources in
            weights.withUnsafeBufferPointer { weights in
                Parallel.forEachChunk(rows, minimumChunk: 2048) { _, range in
                    for row in range {
                        let out = target.baseAddress! + (firstRow + row) * width
                        for e in entries(row) {
                            let w = weights[e] * scale
                            let from = source.baseAddress! + Int(sources[e]) * width
                            for c in 0..<width { out[c] += w * from[c] }
                        }
                    }
                }
            }
        }
    }
}

private func pow2(_ exponent: Int) -> Double {
    var result = 1.0
    for _ in 0..<abs(exponent) { result *= 2 }
    return exponent < 0 ? 1 / result : result
}

// MARK: - Hash table

/// Open addressing over keys of `keySize` 16-bit coordinates; entries are numbered in insertion order.
private final class LatticeHashTable {
    let keySize: Int
    private(set) var count = 0
    private var keyCapacity: Int
    private var keys: UnsafeMutablePointer<Int16>
    private var slots: Int
    private var table: UnsafeMutablePointer<Int32>

    init(keySize: Int, expected: Int) {
        self.keySize = keySize
        slots = 2 * expected
        table = .allocate(capacity: slots)
        table.initialize(repeating: -1, count: slots)
        keyCapacity = expected + 10
        keys = .allocate(capacity: keyCapacity * keySize)
    }

    deinit {
        table.deallocate()
        keys.deallocate()
    }

    private func hash(_ key: UnsafePointer<Int16>) -> Int {
        var h: UInt = 0
        for i in 0..<keySize { h = (h &+ UInt(bitPattern: Int(key[i]))) &* 1_664_525 }
        return Int(h % UInt(slots))
    }

    /// The key of entry `entry` (valid until the next insertion).
    func key(_ entry: Int) -> UnsafePointer<Int16> { UnsafePointer(keys + entry * keySize) }

    /// The entry number of `key`, inserting it when `create`; −1 when absent and not created.
    func find(_ key: UnsafePointer<Int16>, create: Bool) -> Int {
        if 2 * count >= slots { grow() }
        var slot = hash(key)
        while true {
            let entry = Int(table[slot])
            if entry < 0 {
                guard create else { return -1 }
                if count == keyCapacity {
                    let larger = UnsafeMutablePointer<Int16>.allocate(capacity: 2 * keyCapacity * keySize)
                    larger.update(from: keys, count: count * keySize)
                    keys.deallocate()
                    (keys, keyCapacity) = (larger, 2 * keyCapacity)
                }
                (keys + count * keySize).update(from: key, count: keySize)
                table[slot] = Int32(count)
                count += 1
                return count - 1
            }
            let stored = keys + entry * keySize
            var same = true
            for i in 0..<keySize where stored[i] != key[i] {
                same = false
                break
            }
            if same { return entry }
            slot += 1
            if slot == slots { slot = 0 }
        }
    }

    private func grow() {
        table.deallocate()
        slots *= 2
        table = .allocate(capacity: slots)
        table.initialize(repeating: -1, count: slots)
        for entry in 0..<count {
            var slot = hash(keys + entry * keySize)
            while table[slot] >= 0 { slot = slot + 1 == slots ? 0 : slot + 1 }
            table[slot] = Int32(entry)
        }
    }
}
