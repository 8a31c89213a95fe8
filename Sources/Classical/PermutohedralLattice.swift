import SliceLabSupport

/// A permutohedral lattice over `pointCount` points with `dimension` features each: Gaussian filtering of values
/// attached to the points in time linear in the number of points (splat, blur along each lattice axis, slice).
///
/// Features are pre-scaled by the caller (position / width, intensity / width); the filter approximates
/// `out[i] = Σ_j exp(−|f_i − f_j|² / 2) in[j]`, including `j == i`, up to the lattice's constant factor.
/// The construction follows Krähenbühl's `Permutohedral` (the SSE path of pydensecrf: round to nearest, ties to
/// even; lattice vertices numbered in the order points first reach them; blur with weights ½, 1, ½; slice scaled
/// by 1 / (1 + 2⁻ᵈ)), so results agree with pydensecrf to float rounding.
///
/// Values live in rows of `width` floats: one row per point for input and output, one per vertex (plus the
/// always-zero row 0, the "outside" neighbour) on the lattice. Splatting scatters points in point order, so
/// each vertex sums its points in the same order however the work is split (by columns across threads).
/// Reference: Adams, Baek, Davis, "Fast High-Dimensional Filtering Using the Permutohedral Lattice",
/// Eurographics 2010.
public struct PermutohedralLattice: Sendable {
    /// d: the features per point.
    public let dimension: Int
    /// N: the points.
    public let pointCount: Int
    /// M: the lattice vertices the points touch.
    public let vertexCount: Int
    /// The lattice's tables (owned buffers, immutable once built).
    let tables: Tables

    /// For point i and simplex corner r, the vertex number plus one (0 is the always-zero "outside" row):
    /// `offsets[i × (d + 1) + r]`. Valid while the lattice lives.
    var offsets: UnsafePointer<Int32> { UnsafePointer(tables.offsets) }
    /// The barycentric weight of each (point, corner), laid out like `offsets`. Valid while the lattice lives.
    var weights: UnsafePointer<Float> { UnsafePointer(tables.weights) }

    /// Buffers allocated once and freed with the last copy of the lattice.
    final class Tables: @unchecked Sendable {
        let offsets: UnsafeMutablePointer<Int32>
        let weights: UnsafeMutablePointer<Float>
        /// For blur axis j and vertex v, the two neighbours (plus one, 0 when absent):
        /// `neighbours[(j × M + v) × 2 + {0, 1}]`.
        fileprivate(set) var neighbours: UnsafeMutablePointer<Int32>

        init(entries: Int) {
            offsets = .allocate(capacity: max(entries, 1))
            weights = .allocate(capacity: max(entries, 1))
            neighbours = .allocate(capacity: 1)
        }

        deinit {
            offsets.deallocate()
            weights.deallocate()
            neighbours.deallocate()
        }
    }

    /// The slice's constant factor, 1 / (1 + 2⁻ᵈ).
    var sliceScale: Float { Float(1 / (1 + pow2(-dimension))) }

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
        let table = LatticeHashTable(keySize: d, expected: max(n / 4, 64))
        let tables = Tables(entries: n * corners)
        let (offsets, weights) = (tables.offsets, tables.weights)

        // Scratch: the point's elevated position, nearest remainder-0 point, barycentric weights; the canonical
        // simplex (canonical[r × (d + 1) + i]); rank, and the previous point's remainder-0 point and rank (a
        // point in the same simplex as the one before reuses its vertices without hashing); the key.
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: 3 * corners + 1 + d)
        let ints = UnsafeMutablePointer<Int>.allocate(capacity: corners * corners + 5 * corners)
        let key = UnsafeMutablePointer<Int16>.allocate(capacity: 3 * d)
        defer {
            scratch.deallocate()
            ints.deallocate()
            key.deallocate()
        }
        let (elevated, remainder0, barycentric) = (scratch, scratch + corners, scratch + 2 * corners)
        let scale = scratch + 3 * corners + 1
        let (canonical, rank) = (ints, ints + corners * corners)
        let (lastRemainder, lastRank) = (rank + corners, rank + 2 * corners)
        let remainderInts = rank + 3 * corners
        for r in 0...d {
            for i in 0...d { canonical[r * corners + i] = i <= d - r ? r : r - corners }
        }
        lastRank[0] = -1  // no previous point
        let inverseStandardDeviation = Float((2.0 / 3.0).squareRoot() * Double(corners))
        for j in 0..<d {
            scale[j] = Float(1.0 / Double((j + 2) * (j + 1)).squareRoot() * Double(inverseStandardDeviation))
        }
        let down = 1 / Float(corners), up = Float(corners)

        features.withUnsafeBufferPointer { features in
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
                // The corners' keys depend only on remainder0 and rank over the first d coordinates.
                var sameSimplex = true
                for i in 0..<d {
                    remainderInts[i] = Int(remainder0[i])
                    if remainderInts[i] != lastRemainder[i] || rank[i] != lastRank[i] { sameSimplex = false }
                }
                if sameSimplex {
                    for r in 0...d {
                        offsets[point * corners + r] = offsets[(point - 1) * corners + r]
                        weights[point * corners + r] = barycentric[r]
                    }
                    continue
                }
                for i in 0..<d {
                    lastRemainder[i] = remainderInts[i]
                    lastRank[i] = rank[i]
                }
                for r in 0...d {
                    for i in 0..<d {
                        let coordinate = remainderInts[i] + canonical[r * corners + rank[i]]
                        key[i] = Int16(truncatingIfNeeded: coordinate)
                    }
                    offsets[point * corners + r] = Int32(table.find(key, create: true) + 1)
                    weights[point * corners + r] = barycentric[r]
                }
            }
        }

        let m = table.count
        vertexCount = m
        tables.neighbours.deallocate()
        tables.neighbours = .allocate(capacity: max(corners * m * 2, 1))
        let neighbours = tables.neighbours
        let (lower, upper) = (key + d, key + 2 * d)
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
        self.tables = tables
    }

    /// Filters `valueCount` values per point (point-major, `input[i × valueCount + c]`).
    ///
    /// - Parameter reverse: blur the axes in reverse order (the transposed filter).
    /// - Returns: the filtered values, laid out like `input`.
    public func filter(_ input: [Float], valueCount: Int, reverse: Bool = false) -> [Float] {
        precondition(input.count == pointCount * valueCount, "values do not match the lattice's points")
        let width = valueCount, corners = dimension + 1
        var values = [Float](repeating: 0, count: (vertexCount + 1) * width)
        var scratch = [Float](repeating: 0, count: (vertexCount + 1) * width)
        var output = [Float](repeating: 0, count: pointCount * width)
        input.withUnsafeBufferPointer { input in
            values.withUnsafeMutableBufferPointer { values in
                for point in 0..<pointCount {
                    for r in 0..<corners {
                        let e = point * corners + r
                        let row = values.baseAddress! + Int(offsets[e]) * width
                        for c in 0..<width { row[c] += weights[e] * input[point * width + c] }
                    }
                }
                scratch.withUnsafeMutableBufferPointer { scratch in
                    let result = blur(values.baseAddress!, scratch: scratch.baseAddress!, width: width,
                                      reverse: reverse)
                    let alpha = sliceScale
                    output.withUnsafeMutableBufferPointer { output in
                        for point in 0..<pointCount {
                            for r in 0..<corners {
                                let e = point * corners + r
                                let row = result + Int(offsets[e]) * width
                                let w = weights[e] * alpha
                                for c in 0..<width { output[point * width + c] += w * row[c] }
                            }
                        }
                    }
                }
            }
        }
        return output
    }

    /// Blurs vertex rows along every lattice axis (½, 1, ½), ping-ponging between `values` and `scratch`
    /// ((M + 1) × width floats each, row 0 zero in both); vertex chunks run in parallel.
    ///
    /// - Returns: whichever of the two buffers holds the result.
    func blur(_ values: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>, width: Int,
              reverse: Bool = false) -> UnsafeMutablePointer<Float> {
        let d = dimension, m = vertexCount
        var (old, new) = (values, scratch)
        let neighbours = UnsafePointer(tables.neighbours)
        for step in 0...d {
            let axis = reverse ? d - step : step
            let (source, target) = (UnsafePointer(old), new)
            Parallel.forEachChunk(m, minimumChunk: 2048) { _, range in
                if width % 4 == 0 {
                    for vertex in range {
                        let here = (vertex + 1) * width
                        let first = source + Int(neighbours[(axis * m + vertex) * 2]) * width
                        let second = source + Int(neighbours[(axis * m + vertex) * 2 + 1]) * width
                        for c in stride(from: 0, to: width, by: 4) {
                            let sum = load4(source + here + c) + 0.5 * (load4(first + c) + load4(second + c))
                            store4(sum, target + here + c)
                        }
                    }
                } else {
                    for vertex in range {
                        let here = (vertex + 1) * width
                        let first = Int(neighbours[(axis * m + vertex) * 2]) * width
                        let second = Int(neighbours[(axis * m + vertex) * 2 + 1]) * width
                        for c in 0..<width {
                            target[here + c] = source[here + c] + 0.5 * (source[first + c] + source[second + c])
                        }
                    }
                }
            }
            swap(&old, &new)
        }
        return old
    }
}

// MARK: - SIMD helpers

@inline(__always) func load4(_ pointer: UnsafePointer<Float>) -> SIMD4<Float> {
    UnsafeRawPointer(pointer).loadUnaligned(as: SIMD4<Float>.self)
}

@inline(__always) func load4(_ pointer: UnsafeMutablePointer<Float>) -> SIMD4<Float> {
    UnsafeRawPointer(pointer).loadUnaligned(as: SIMD4<Float>.self)
}

@inline(__always) func store4(_ value: SIMD4<Float>, _ pointer: UnsafeMutablePointer<Float>) {
    UnsafeMutableRawPointer(pointer).storeBytes(of: value, as: SIMD4<Float>.self)
}

private func pow2(_ exponent: Int) -> Double {
    var result = 1.0
    for _ in 0..<abs(exponent) { result *= 2 }
    return exponent < 0 ? 1 / result : result
}

// MARK: - Hash table

/// Open addressing over keys of `keySize` 16-bit coordinates; entries are numbered in insertion order. Keys of up
/// to four coordinates are compared as one packed 64-bit word.
private final class LatticeHashTable {
    let keySize: Int
    private(set) var count = 0
    private var keyCapacity: Int
    private var keys: UnsafeMutablePointer<Int16>
    /// Per entry: the key packed into 64 bits (exact for keySize ≤ 4, a hash otherwise).
    private var signatures: UnsafeMutablePointer<UInt64>
    /// A power of two.
    private var slots: Int
    private var table: UnsafeMutablePointer<Int32>

    init(keySize: Int, expected: Int) {
        self.keySize = keySize
        slots = 64
        while slots < 2 * expected { slots *= 2 }
        table = .allocate(capacity: slots)
        table.initialize(repeating: -1, count: slots)
        keyCapacity = expected + 10
        keys = .allocate(capacity: keyCapacity * keySize)
        signatures = .allocate(capacity: keyCapacity)
    }

    deinit {
        table.deallocate()
        keys.deallocate()
        signatures.deallocate()
    }

    @inline(__always) private func signature(_ key: UnsafePointer<Int16>) -> UInt64 {
        var packed: UInt64 = 0
        if keySize <= 4 {
            for i in 0..<keySize { packed |= UInt64(UInt16(bitPattern: key[i])) << (16 * UInt64(i)) }
        } else {
            for i in 0..<keySize { packed = (packed ^ UInt64(UInt16(bitPattern: key[i]))) &* 0x100_0000_01B3 }
        }
        return packed
    }

    @inline(__always) private func slot(of signature: UInt64) -> Int {
        Int(truncatingIfNeeded: (signature &* 0x9E37_79B9_7F4A_7C15) >> 32) & (slots - 1)
    }

    /// The key of entry `entry` (valid until the next insertion).
    func key(_ entry: Int) -> UnsafePointer<Int16> { UnsafePointer(keys + entry * keySize) }

    /// The entry number of `key`, inserting it when `create`; −1 when absent and not created.
    func find(_ key: UnsafePointer<Int16>, create: Bool) -> Int {
        if 2 * count >= slots { grow() }
        let wanted = signature(key)
        var slot = slot(of: wanted)
        while true {
            let entry = Int(table[slot])
            if entry < 0 {
                guard create else { return -1 }
                if count == keyCapacity {
                    let larger = UnsafeMutablePointer<Int16>.allocate(capacity: 2 * keyCapacity * keySize)
                    larger.update(from: keys, count: count * keySize)
                    keys.deallocate()
                    let largerSignatures = UnsafeMutablePointer<UInt64>.allocate(capacity: 2 * keyCapacity)
                    largerSignatures.update(from: signatures, count: count)
                    signatures.deallocate()
                    (keys, signatures, keyCapacity) = (larger, largerSignatures, 2 * keyCapacity)
                }
                (keys + count * keySize).update(from: key, count: keySize)
                signatures[count] = wanted
                table[slot] = Int32(count)
                count += 1
                return count - 1
            }
            if signatures[entry] == wanted {
                if keySize <= 4 { return entry }
                let stored = keys + entry * keySize
                var same = true
                for i in 0..<keySize where stored[i] != key[i] {
                    same = false
                    break
                }
                if same { return entry }
            }
            slot = (slot + 1) & (slots - 1)
        }
    }

    private func grow() {
        table.deallocate()
        slots *= 2
        table = .allocate(capacity: slots)
        table.initialize(repeating: -1, count: slots)
        for entry in 0..<count {
            var slot = slot(of: signatures[entry])
            while table[slot] >= 0 { slot = (slot + 1) & (slots - 1) }
            table[slot] = Int32(entry)
        }
    }
}
