import CDenseCRFKernels
import Foundation
import SliceLabSupport

extension DenseCRF {
    /// The compiled version of the CRF's inner loops (`CDenseCRFKernels`): baseline x86-64 (SSE2, 4 floats at a
    /// time) or AVX2 + FMA (8 floats, fused multiply-adds). Both compute the same mean field; the summation
    /// grouping and the fused roundings differ within float rounding.
    public enum KernelPath: String, Sendable, CaseIterable {
        case baseline
        case avx2FMA = "avx2-fma"

        /// The path a run takes: AVX2 + FMA when this CPU reports both, else baseline; the environment variable
        /// `SLICELAB_CRF_KERNELS=baseline` forces baseline. Rests on `crf_kernels_default`.
        public static var automatic: KernelPath { KernelPath(crf_kernels_default()) }

        /// Whether this CPU can run the path. Rests on `crf_kernels_supported` (`__builtin_cpu_supports`).
        public var isSupported: Bool { crf_kernels_supported(cValue) != 0 }

        init(_ path: crf_kernels_path) { self = path == crf_kernels_avx2_fma ? .avx2FMA : .baseline }

        var cValue: crf_kernels_path { self == .avx2FMA ? crf_kernels_avx2_fma : crf_kernels_baseline }
    }

    /// Mean-field inference over owned, padded buffers: rows of `width` = K rounded up to a multiple of 4 floats
    /// per pixel (the padding columns hold Q = 0 and so never reach the lattices), reused across iterations.
    ///
    /// The pixels are split into two fixed halves (`parts`), whatever the core count: each half splats into its
    /// own copy of every lattice, in pixel order, and the blur's first step reads the two copies' sum, so every
    /// vertex sums in the same order on one core or two. One iteration is two passes: blur each kernel's lattice,
    /// then per pixel slice every kernel (normalisation, Potts weight and the slice's constant folded into one
    /// factor), add the unary, take the softmax, and splat the new Q straight into the next iteration's lattice
    /// copies (the first Q likewise as the unary is computed), so Q is never stored but as the last
    /// iteration's marginals. The arithmetic is pydensecrf's (`DenseCRF::inference`
    /// with `NORMALIZE_SYMMETRIC` and `PottsCompatibility`); only the summation grouping (and, on the AVX2 path,
    /// fused multiply-adds) differ, within float rounding. The loops are `CDenseCRFKernels`' (`crf_prepare`,
    /// `crf_splat`, `crf_blur_sum`, `crf_slice_softmax_splat`).
    final class MeanField {
        let classCount: Int
        /// K rounded up to a multiple of 4.
        let width: Int
        let pointCount: Int
        let kernels: [Kernel]
        /// Which build of the inner loops runs.
        let path: KernelPath
        /// The fixed pixel halves that splat into separate lattice copies (run concurrently on two cores).
        static let parts = 2
        /// log p (clipped below at `probabilityFloor`), rows of `width`; padding columns 0.
        private let unary: UnsafeMutablePointer<Float>
        /// Per kernel, three buffers of (M + 1) rows of `width` (row 0 always 0): the blurred lattice the next
        /// slice reads, and the two halves' splat targets, which the blur then ping-pongs through.
        private let buffers: [[UnsafeMutablePointer<Float>]]
        /// Per kernel, which of its buffers holds the blurred lattice.
        private var blurred: [Int]
        /// Per kernel, its symmetric normalisation (a copy with a stable address).
        private let normalisations: [UnsafeMutablePointer<Float>]

        /// What the C loops read of every kernel (valid while `kernels` lives), pointing at `lattices`.
        private func views(lattices: [UnsafeMutablePointer<Float>]) -> [crf_kernel_view] {
            kernels.indices.map { index in
                let kernel = kernels[index]
                return crf_kernel_view(
                    corners: Int32(kernel.lattice.dimension + 1), offsets: kernel.lattice.offsets,
                    weights: kernel.lattice.weights,
                    normalisation: UnsafePointer(normalisations[index]),
                    factor: kernel.weight * kernel.lattice.sliceScale, lattice: lattices[index])
            }
        }

        /// Per kernel, the splat target of pixel half `part`: its buffers other than the blurred one, in order.
        private func targets(part: Int) -> [UnsafeMutablePointer<Float>] {
            kernels.indices.map { index in
                buffers[index][buffers[index].indices.filter { $0 != blurred[index] }[part]]
            }
        }

        /// The pixels of half `part`.
        private func pixels(part: Int) -> Range<Int> {
            (part * pointCount / Self.parts)..<((part + 1) * pointCount / Self.parts)
        }

        /// Sets up the unary and Q = softmax(log p) = the clipped, renormalised probabilities (pixel-major, K per
        /// pixel), and splats Q.
        init(probabilities: [Float], classCount k: Int, kernels: [Kernel], path: KernelPath) {
            let n = probabilities.count / k
            let width = (k + 3) / 4 * 4
            (classCount, self.width, pointCount, self.kernels, self.path) = (k, width, n, kernels, path)
            unary = largeBuffer(n * width)
            buffers = kernels.map { kernel in
                (0..<3).map { _ in largeBuffer((kernel.lattice.vertexCount + 1) * width) }
            }
            blurred = kernels.map { _ in 2 }
            normalisations = kernels.map { kernel in
                let copy = UnsafeMutablePointer<Float>.allocate(capacity: max(n, 1))
                kernel.normalisation.withUnsafeBufferPointer { copy.update(from: $0.baseAddress!, count: n) }
                return copy
            }
            // Buffer 2 is blurred into before it is read, but its row 0 (the absent neighbour) must be 0.
            for kernelBuffers in buffers { kernelBuffers[2].initialize(repeating: 0, count: width) }
            // Q = softmax(log p) = p / Σ p after clipping: computed as such, without the exponential.
            let (unary, cPath) = (unary, path.cValue)
            let halves = (0..<Self.parts).map { (views(lattices: targets(part: $0)), pixels(part: $0)) }
            withExtendedLifetime(kernels) {
                probabilities.withUnsafeBufferPointer { probabilities in
                    let source = probabilities.baseAddress!
                    Parallel.forEach(Self.parts) { part in
                        let (views, range) = halves[part]
                        clear(views)
                        let targets: [UnsafeMutablePointer<Float>?] = views.map { $0.lattice }
                        crf_prepare_splat(
                            cPath, source, Int64(k), Int64(width), DenseCRF.probabilityFloor, unary,
                            nil, views, Int32(views.count), targets, Int64(range.lowerBound),
                            Int64(range.upperBound))
                    }
                }
            }
        }

        deinit {
            for buffer in [unary] + buffers.joined() { crf_free(buffer) }
            for buffer in normalisations { buffer.deallocate() }
        }

        /// Runs `iterations` ≥ 1 mean-field updates of Q.
        ///
        /// - Returns: the marginals, pixel-major with K values per pixel.
        func run(iterations: Int) -> [Float] {
            precondition(iterations >= 1, "mean field needs at least one iteration")
            return [Float](unsafeUninitializedCapacity: pointCount * classCount) { marginals, initialised in
                withExtendedLifetime(kernels) {
                    for iteration in 0..<iterations {
                        for index in kernels.indices { blur(index) }
                        sliceAndSplat(marginals: iteration == iterations - 1 ? marginals.baseAddress : nil)
                    }
                }
                initialised = pointCount * classCount
            }
        }

        // MARK: - Passes

        /// Zeroes the lattices `views` point at (their rows of `width`).
        private func clear(_ views: [crf_kernel_view]) {
            for (view, kernel) in zip(views, kernels) {
                view.lattice.update(repeating: 0, count: (kernel.lattice.vertexCount + 1) * width)
            }
        }

        /// Blurs kernel `index`'s lattice along every axis (½, 1, ½): the first step from the sum of the two
        /// halves' splats into the old blurred buffer, then ping-ponging; vertex chunks run in parallel.
        private func blur(_ index: Int) {
            let lattice = kernels[index].lattice
            let (d, m, width, path) = (lattice.dimension, lattice.vertexCount, width, path.cValue)
            let halves = buffers[index].indices.filter { $0 != blurred[index] }
            var (old, new) = (halves[0], blurred[index])
            for axis in 0...d {
                let (source, target) = (UnsafePointer(buffers[index][old]), buffers[index][new])
                let second = axis == 0 ? UnsafePointer(buffers[index][halves[1]]) : nil
                let neighbours = lattice.neighbours + axis * m * 2
                Parallel.forEachChunk(m, minimumChunk: 2048) { _, range in
                    crf_blur_sum(
                        path, source, second, target, neighbours, Int64(width), Int64(range.lowerBound),
                        Int64(range.upperBound))
                }
                swap(&old, &new)
            }
            blurred[index] = old
        }

        /// Q[pixel] = softmax(log p + Σ_kernels weight × normalisation × slice(blurred)), each half of the pixels
        /// on its own thread, splatted into its lattice copies, or (after the last iteration) stored in
        /// `marginals` (K per pixel).
        private func sliceAndSplat(marginals: UnsafeMutablePointer<Float>?) {
            let (width, k, unary, path) = (width, classCount, unary, path.cValue)
            let views = views(lattices: blurred.indices.map { buffers[$0][blurred[$0]] })
            let halves = (0..<Self.parts).map { (self.views(lattices: targets(part: $0)), pixels(part: $0)) }
            views.withUnsafeBufferPointer { views in
                let (pointer, count) = (views.baseAddress!, Int32(views.count))
                Parallel.forEach(Self.parts) { part in
                    let (targetViews, range) = halves[part]
                    if let marginals {
                        crf_slice_softmax_splat(
                            path, pointer, count, unary, marginals, Int64(k), nil, Int64(width),
                            Int64(k), Int64(range.lowerBound), Int64(range.upperBound))
                        return
                    }
                    clear(targetViews)
                    let targets: [UnsafeMutablePointer<Float>?] = targetViews.map { $0.lattice }
                    crf_slice_softmax_splat(
                        path, pointer, count, unary, nil, 0, targets, Int64(width), Int64(k),
                        Int64(range.lowerBound), Int64(range.upperBound))
                }
            }
        }
    }
}

/// `count` floats from `crf_allocate` (huge pages where the kernel grants them); free with `crf_free`.
private func largeBuffer(_ count: Int) -> UnsafeMutablePointer<Float> {
    guard let buffer = crf_allocate(Int64(count)) else {
        preconditionFailure("the dense CRF could not allocate \(count) floats")
    }
    return buffer
}

/// The processors this process may run on (its affinity mask, so `taskset -c 0` counts one): the
/// `Cpus_allowed` mask of `/proc/self/status`, else `Parallel.processorCount`.
private let usableProcessors: Int = {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") })
    else {
        return Parallel.processorCount
    }
    let bits = line.dropFirst("Cpus_allowed:".count).compactMap { $0.hexDigitValue?.nonzeroBitCount }
    return max(1, min(bits.reduce(0, +), Parallel.processorCount))
}()
