import Foundation
import SliceLabSupport

extension DenseCRF {
    /// Mean-field inference over owned, padded buffers: rows of `width` = K rounded up to a multiple of 4 floats
    /// per pixel (the padding columns hold Q = 0 and so never reach the lattices), reused across iterations.
    ///
    /// One iteration is three passes: splat Q into every kernel's lattice (the symmetric normalisation folded
    /// into the barycentric weights), blur each lattice, then per pixel slice every kernel (normalisation, Potts
    /// weight and the slice's constant folded into one factor), add the unary and take the softmax in place. The
    /// arithmetic is pydensecrf's (`DenseCRF::inference` with `NORMALIZE_SYMMETRIC` and `PottsCompatibility`);
    /// only the summation grouping differs, within float rounding.
    final class MeanField {
        let classCount: Int
        /// K rounded up to a multiple of 4.
        let width: Int
        let pointCount: Int
        let kernels: [Kernel]
        /// log p (clipped below at `probabilityFloor`), rows of `width`; padding columns 0.
        private let unary: UnsafeMutablePointer<Float>
        /// Q, rows of `width`; padding columns 0.
        private let q: UnsafeMutablePointer<Float>
        /// Per kernel: the lattice values and the blur's second buffer, (M + 1) rows of `width`; row 0 stays 0.
        private let values: [UnsafeMutablePointer<Float>]
        private let scratch: [UnsafeMutablePointer<Float>]
        /// Per kernel, the blurred buffer (values or scratch) the last blur left.
        private var blurred: [UnsafeMutablePointer<Float>]
        /// Per kernel, its symmetric normalisation (a copy with a stable address).
        private let normalisations: [UnsafeMutablePointer<Float>]
        /// 1 for the last four columns that are classes, 0 for padding.
        private let tailMask: SIMD4<Float>

        /// What the per-pixel loops read of one kernel, as plain pointers (valid while `kernels` lives).
        private struct View {
            let corners: Int
            let offsets: UnsafePointer<Int32>
            let weights: UnsafePointer<Float>
            let normalisation: UnsafePointer<Float>
            /// Potts weight × the slice's constant.
            let factor: Float
            let lattice: UnsafeMutablePointer<Float>
        }

        private func views(lattices: [UnsafeMutablePointer<Float>]) -> [View] {
            kernels.indices.map { index in
                let kernel = kernels[index]
                return View(corners: kernel.lattice.dimension + 1, offsets: kernel.lattice.offsets,
                            weights: kernel.lattice.weights, normalisation: normalisations[index],
                            factor: kernel.weight * kernel.lattice.sliceScale, lattice: lattices[index])
            }
        }

        /// Sets up Q = softmax(log p) = the clipped, renormalised probabilities (pixel-major, K per pixel).
        init(probabilities: [Float], classCount k: Int, kernels: [Kernel]) {
            let n = probabilities.count / k
            let width = (k + 3) / 4 * 4
            (classCount, self.width, pointCount, self.kernels) = (k, width, n, kernels)
            tailMask = SIMD4((0..<4).map { width - 4 + $0 < k ? 1 : 0 })
            unary = .allocate(capacity: n * width)
            q = .allocate(capacity: n * width)
            values = kernels.map { .allocate(capacity: ($0.lattice.vertexCount + 1) * width) }
            scratch = kernels.map { .allocate(capacity: ($0.lattice.vertexCount + 1) * width) }
            blurred = values
            normalisations = kernels.map { kernel in
                let copy = UnsafeMutablePointer<Float>.allocate(capacity: max(n, 1))
                kernel.normalisation.withUnsafeBufferPointer { copy.update(from: $0.baseAddress!, count: n) }
                return copy
            }
            for (buffer, kernel) in zip(values + scratch, kernels + kernels) {
                buffer.initialize(repeating: 0, count: (kernel.lattice.vertexCount + 1) * width)
            }
            // Q = softmax(log p) = p / Σ p after clipping: computed as such, without the exponential.
            let floor = DenseCRF.probabilityFloor
            probabilities.withUnsafeBufferPointer { probabilities in
                for pixel in 0..<n {
                    let (source, clipped, first) = (probabilities.baseAddress! + pixel * k, unary + pixel * width,
                                                    q + pixel * width)
                    var total: Float = 0
                    for c in 0..<k {
                        let p = source[c]
                        let value = p < floor ? floor : (p > 1 ? 1 : p)
                        clipped[c] = value
                        total += value
                    }
                    for c in k..<width { clipped[c] = 1 }
                    let inverse = 1 / total
                    for c in 0..<k { first[c] = clipped[c] * inverse }
                    for c in k..<width { first[c] = 0 }
                    for c in stride(from: 0, to: width, by: 4) { store4(logarithm(load4(clipped + c)), clipped + c) }
                }
            }
        }

        deinit {
            unary.deallocate()
            q.deallocate()
            for buffer in values + scratch + normalisations { buffer.deallocate() }
        }

        /// One mean-field update of Q.
        func iterate() {
            withExtendedLifetime(kernels) {
                splat()
                for index in kernels.indices {
                    blurred[index] = kernels[index].lattice.blur(values[index], scratch: scratch[index],
                                                                 width: width)
                }
                sliceAndNormalise()
            }
        }

        /// The marginals, pixel-major with K values per pixel.
        func marginals() -> [Float] {
            let (k, width) = (classCount, width)
            var result = [Float](repeating: 0, count: pointCount * k)
            result.withUnsafeMutableBufferPointer { result in
                for pixel in 0..<pointCount {
                    for c in 0..<k { result[pixel * k + c] = q[pixel * width + c] }
                }
            }
            return result
        }

        // MARK: - Passes

        /// values[vertex] = Σ over the vertex's (pixel, corner) entries, in pixel order, of
        /// (barycentric × normalisation[pixel]) × Q[pixel]. Columns are split across threads, so every vertex
        /// sums in the same order on any number of cores.
        private func splat() {
            let width = width, n = pointCount
            for (index, kernel) in kernels.enumerated() {
                values[index].update(repeating: 0, count: (kernel.lattice.vertexCount + 1) * width)
            }
            let blocks = width / 4
            let groups = min(blocks, usableProcessors)
            let views = views(lattices: values)
            views.withUnsafeBufferPointer { views in
                Parallel.forEach(groups) { group in
                    let first = group * blocks / groups * 4, end = (group + 1) * blocks / groups * 4
                    for pixel in 0..<n {
                        let source = self.q + pixel &* width
                        for view in views {
                            let scale = view.normalisation[pixel]
                            let base = pixel &* view.corners
                            for e in base..<(base &+ view.corners) {
                                let row = view.lattice + Int(view.offsets[e]) &* width
                                let w = SIMD4<Float>(repeating: view.weights[e] * scale)
                                var c = first
                                while c < end {
                                    store4(load4(row + c) + w * load4(source + c), row + c)
                                    c &+= 4
                                }
                            }
                        }
                    }
                }
            }
        }

        /// Q[pixel] = softmax(log p + Σ_kernels weight × normalisation × slice(blurred)), pixel chunks in
        /// parallel.
        private func sliceAndNormalise() {
            let width = width
            let views = views(lattices: blurred)
            _ = views.withUnsafeBufferPointer { views in
                Parallel.forEachChunk(pointCount, minimumChunk: 4096) { _, range in
                    for pixel in range {
                        let row = self.q + pixel * width, unary = self.unary + pixel * width
                        // Eight columns at a time (then four), summed in registers over every kernel's corners.
                        var c = 0
                        while c &+ 8 <= width {
                            var low = load4(unary + c), high = load4(unary + c + 4)
                            for view in views {
                                let scale = view.factor * view.normalisation[pixel]
                                let base = pixel &* view.corners
                                for e in base..<(base &+ view.corners) {
                                    let vertex = view.lattice + (Int(view.offsets[e]) &* width &+ c)
                                    let w = SIMD4<Float>(repeating: view.weights[e] * scale)
                                    low += w * load4(vertex)
                                    high += w * load4(vertex + 4)
                                }
                            }
                            store4(low, row + c)
                            store4(high, row + c + 4)
                            c &+= 8
                        }
                        if c < width {
                            var low = load4(unary + c)
                            for view in views {
                                let scale = view.factor * view.normalisation[pixel]
                                let base = pixel &* view.corners
                                for e in base..<(base &+ view.corners) {
                                    let vertex = view.lattice + (Int(view.offsets[e]) &* width &+ c)
                                    low += SIMD4<Float>(repeating: view.weights[e] * scale) * load4(vertex)
                                }
                            }
                            store4(low, row + c)
                        }
                        self.softmax(row)
                    }
                }
            }
        }

        /// Replaces a row of energies by their softmax over the first K columns (padding columns become 0).
        @inline(__always) private func softmax(_ row: UnsafeMutablePointer<Float>) {
            var top = row[0]
            for c in 1..<classCount {
                let value = row[c]
                top = value > top ? value : top
            }
            // eˣ below −87.3 is below Float's normal range; `exponential` needs x ≥ −87.3.
            for c in 0..<width {
                let x = row[c] - top
                row[c] = x < -87.3 ? -87.3 : x
            }
            var total = SIMD4<Float>(repeating: 0)
            let last = width - 4
            for c in stride(from: 0, to: last, by: 4) {
                let e = exponential(load4(row + c))
                total += e
                store4(e, row + c)
            }
            let e = exponential(load4(row + last)) * tailMask
            total += e
            store4(e, row + last)
            let inverse = SIMD4<Float>(repeating: 1 / total.sum())
            for c in stride(from: 0, to: width, by: 4) { store4(load4(row + c) * inverse, row + c) }
        }
    }
}

/// The processors this process may run on (its affinity mask, so `taskset -c 0` counts one): the
/// `Cpus_allowed` mask of `/proc/self/status`, else `Parallel.processorCount`.
private let usableProcessors: Int = {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") }) else {
        return Parallel.processorCount
    }
    let bits = line.dropFirst("Cpus_allowed:".count).compactMap { $0.hexDigitValue?.nonzeroBitCount }
    return max(1, min(bits.reduce(0, +), Parallel.processorCount))
}()

/// ln x for normal positive x, four lanes at a time: musl's reduction to m ∈ [√½, √2) by integer arithmetic,
/// then Cephes' `logf` polynomial (relative error below 2 × 10⁻⁷).
@inline(__always) func logarithm(_ x: SIMD4<Float>) -> SIMD4<Float> {
    let shifted = unsafeBitCast(x, to: SIMD4<UInt32>.self) &+ (0x3F80_0000 - 0x3F35_04F3)
    // The exponent k as a float: k + 1.5 × 2²³ has k in its low mantissa bits.
    let exponentBits = (shifted &>> 23) &+ (0x4B40_0000 - 127)
    let k = unsafeBitCast(exponentBits, to: SIMD4<Float>.self) - 12_582_912
    let m = unsafeBitCast((shifted & 0x007F_FFFF) &+ 0x3F35_04F3, to: SIMD4<Float>.self) - 1
    let z = m * m
    var y = SIMD4<Float>(repeating: 7.037_683_629_2e-2)
    y = y * m - 1.151_461_031_0e-1
    y = y * m + 1.167_699_874_0e-1
    y = y * m - 1.242_014_084_6e-1
    y = y * m + 1.424_932_278_7e-1
    y = y * m - 1.666_805_766_5e-1
    y = y * m + 2.000_071_476_5e-1
    y = y * m - 2.499_999_399_3e-1
    y = y * m + 3.333_333_117_4e-1
    y = y * m * z
    y += k * -2.121_944_4e-4
    y -= 0.5 * z
    return m + y + k * 0.693_359_375
}

/// eˣ for −87.3 ≤ x ≤ 0, four lanes at a time: Cephes' `expf` (range reduction by ln 2 in two parts, a
/// degree-6 polynomial; relative error below 2 × 10⁻⁷).
@inline(__always) func exponential(_ x: SIMD4<Float>) -> SIMD4<Float> {
    // Round x / ln 2 to the nearest integer n by adding 1.5 × 2²³: n lands in the low mantissa bits.
    let shifted = x * 1.442_695_04 + 12_582_912
    let n = shifted - 12_582_912
    let r = x - n * 0.693_359_375 - n * -2.121_944_4e-4
    let r2 = r * r
    var p = SIMD4<Float>(repeating: 1.987_569_15e-4)
    p = p * r + 1.398_199_950_7e-3
    p = p * r + 8.333_451_907_3e-3
    p = p * r + 4.166_579_589_4e-2
    p = p * r + 1.666_666_545_9e-1
    p = p * r + 5.000_000_120_1e-1
    p = p * r2 + r + 1
    let bits = unsafeBitCast(shifted, to: SIMD4<UInt32>.self) &- 0x4B40_0000 &+ 127
    return p * unsafeBitCast(bits &<< 23, to: SIMD4<Float>.self)
}

