import CDenseCRFKernels
import SliceLabSupport

/// A permutohedral lattice over `pointCount` points with `dimension` features each: Gaussian filtering of values
/// attached to the points in time linear in the number of points (splat, blur along each lattice axis, slice).
///
/// Features are pre-scaled by the caller (position / width, intensity / width); the filter approximates
/// `out[i] = Σ_j exp(−|f_i − f_j|² / 2) in[j]`, including `j == i`, up to the lattice's constant factor.
/// The construction (`crf_lattice_build`, C) follows Krähenbühl's `Permutohedral` (the SSE path of pydensecrf: round to nearest, ties to
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
    /// For blur axis j and vertex v, the two neighbours (plus one, 0 when absent):
    /// `neighbours[(j × M + v) × 2 + {0, 1}]`. Valid while the lattice lives.
    var neighbours: UnsafePointer<Int32> { UnsafePointer(tables.neighbours!) }

    /// Buffers allocated once and freed with the last copy of the lattice.
    // @unchecked Sendable: the buffers are written while the lattice is built, before it is shared, and only read
    // by the parallel blur passes afterwards; they are freed in `deinit`.
    final class Tables: @unchecked Sendable {
        let offsets: UnsafeMutablePointer<Int32>
        let weights: UnsafeMutablePointer<Float>
        /// For blur axis j and vertex v, the two neighbours (plus one, 0 when absent):
        /// `neighbours[(j × M + v) × 2 + {0, 1}]`; from `crf_lattice_build`, freed with `crf_free`.
        fileprivate(set) var neighbours: UnsafeMutablePointer<Int32>?

        init(entries: Int) {
            offsets = .allocate(capacity: max(entries, 1))
            weights = .allocate(capacity: max(entries, 1))
        }

        deinit {
            offsets.deallocate()
            weights.deallocate()
            crf_free(neighbours)
        }
    }

    /// The slice's constant factor, 1 / (1 + 2⁻ᵈ).
    var sliceScale: Float { Float(1 / (1 + pow2(-dimension))) }

    /// Builds the lattice. Rests on `crf_lattice_build` (`CDenseCRFKernels`).
    ///
    /// - Parameters:
    ///   - features: point-major, `features[i × dimension + k]`, already divided by the kernel widths.
    ///   - dimension: d ≥ 1.
    /// - Precondition: `features.count == pointCount × dimension` for some pointCount ≥ 0; memory for the
    ///   lattice's tables.
    public init(features: [Float], dimension d: Int) {
        precondition(d >= 1 && features.count % d == 0, "features do not split into \(d)-vectors")
        let n = features.count / d
        (dimension, pointCount) = (d, n)
        let tables = Tables(entries: n * (d + 1))
        var vertices: Int64 = 0
        var neighbours: UnsafeMutablePointer<Int32>?
        let status = features.withUnsafeBufferPointer { features in
            crf_lattice_build(
                features.baseAddress, Int64(n), Int32(d), tables.offsets, tables.weights,
                &vertices, &neighbours)
        }
        precondition(status == 0, "out of memory building a permutohedral lattice over \(n) points")
        tables.neighbours = neighbours
        vertexCount = Int(vertices)
        self.tables = tables
    }

    /// Filters `valueCount` values per point (point-major, `input[i × valueCount + c]`).
    ///
    /// - Parameter reverse: blur the axes in reverse order (the transposed filter).
    /// - Returns: the filtered values, laid out like `input`.
    public func filter(_ input: [Float], valueCount: Int, reverse: Bool = false) -> [Float] {
        precondition(input.count == pointCount * valueCount, "values do not match the lattice's points")
        let width = valueCount
        let corners = dimension + 1
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
                    let result = blur(
                        values.baseAddress!, scratch: scratch.baseAddress!, width: width,
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
    func blur(
        _ values: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>, width: Int,
        reverse: Bool = false
    ) -> UnsafeMutablePointer<Float> {
        let d = dimension
        let m = vertexCount
        var (old, new) = (values, scratch)
        let neighbours = self.neighbours
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
