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
    /// One iteration is three passes: splat Q into every kernel's lattice (the symmetric normalisation folded
    /// into the barycentric weights), blur each lattice, then per pixel slice every kernel (normalisation, Potts
    /// weight and the slice's constant folded into one factor), add the unary and take the softmax in place. The
    /// arithmetic is pydensecrf's (`DenseCRF::inference` with `NORMALIZE_SYMMETRIC` and `PottsCompatibility`);
    /// only the summation grouping (and, on the AVX2 path, fused multiply-adds) differ, within float rounding.
    /// The loops are `CDenseCRFKernels`' (`crf_prepare`, `crf_splat`, `crf_blur`, `crf_slice_softmax`).
    final class MeanField {
        let classCount: Int
        /// K rounded up to a multiple of 4.
        let width: Int
        let pointCount: Int
        let kernels: [Kernel]
        /// Which build of the inner loops runs.
        let path: KernelPath
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

        /// What the C loops read of every kernel (valid while `kernels` lives), pointing at `lattices`.
        private func views(lattices: [UnsafeMutablePointer<Float>]) -> [crf_kernel_view] {
            kernels.indices.map { index in
                let kernel = kernels[index]
                return crf_kernel_view(corners: Int32(kernel.lattice.dimension + 1), offsets: kernel.lattice.offsets,
                                       weights: kernel.lattice.weights,
                                       normalisation: UnsafePointer(normalisations[index]),
                                       factor: kernel.weight * kernel.lattice.sliceScale, lattice: lattices[index])
            }
        }

        /// Sets up Q = softmax(log p) = the clipped, renormalised probabilities (pixel-major, K per pixel).
        init(probabilities: [Float], classCount k: Int, kernels: [Kernel], path: KernelPath) {
            let n = probabilities.count / k
            let width = (k + 3) / 4 * 4
            (classCount, self.width, pointCount, self.kernels, self.path) = (k, width, n, kernels, path)
            unary = largeBuffer(n * width)
            q = largeBuffer(n * width)
            values = kernels.map { largeBuffer(($0.lattice.vertexCount + 1) * width) }
            scratch = kernels.map { largeBuffer(($0.lattice.vertexCount + 1) * width) }
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
            let (unary, q, cPath) = (unary, q, path.cValue)
            probabilities.withUnsafeBufferPointer { probabilities in
                let source = probabilities.baseAddress!
                Parallel.forEachChunk(n, minimumChunk: 16384) { _, range in
                    crf_prepare(cPath, source, Int64(k), Int64(width), DenseCRF.probabilityFloor, unary, q,
                                Int64(range.lowerBound), Int64(range.upperBound))
                }
            }
        }

        deinit {
            for buffer in [unary, q] + values + scratch { crf_free(buffer) }
            for buffer in normalisations { buffer.deallocate() }
        }

        /// One mean-field update of Q.
        func iterate() {
            withExtendedLifetime(kernels) {
                splat()
                for index in kernels.indices { blur(index) }
                sliceAndNormalise()
            }
        }

        /// The marginals, pixel-major with K values per pixel.
        func marginals() -> [Float] {
            let (k, width) = (classCount, width)
            return [Float](unsafeUninitializedCapacity: pointCount * k) { result, initialised in
                for pixel in 0..<pointCount {
                    for c in 0..<k { result[pixel * k + c] = q[pixel * width + c] }
                }
                initialised = pointCount * k
            }
        }

        // MARK: - Passes

        /// values[vertex] = Σ over the vertex's (pixel, corner) entries, in pixel order, of
        /// (barycentric × normalisation[pixel]) × Q[pixel]. Columns (in fours) are split across threads, so
        /// every vertex sums in the same order on any number of cores.
        private func splat() {
            let (width, n, q, path) = (width, pointCount, q, path.cValue)
            for (index, kernel) in kernels.enumerated() {
                values[index].update(repeating: 0, count: (kernel.lattice.vertexCount + 1) * width)
            }
            let blocks = width / 4
            let groups = min(blocks, usableProcessors)
            let views = views(lattices: values)
            views.withUnsafeBufferPointer { views in
                let (pointer, count) = (views.baseAddress!, Int32(views.count))
                Parallel.forEach(groups) { group in
                    let first = group * blocks / groups * 4, end = (group + 1) * blocks / groups * 4
                    crf_splat(path, pointer, count, q, Int64(width), 0, Int64(n), Int64(first), Int64(end))
                }
            }
        }

        /// Blurs kernel `index`'s lattice along every axis (½, 1, ½), ping-ponging between its two buffers;
        /// vertex chunks run in parallel.
        private func blur(_ index: Int) {
            let lattice = kernels[index].lattice
            let (d, m, width, path) = (lattice.dimension, lattice.vertexCount, width, path.cValue)
            var (old, new) = (values[index], scratch[index])
            for axis in 0...d {
                let (source, target) = (UnsafePointer(old), new)
                let neighbours = lattice.neighbours + axis * m * 2
                Parallel.forEachChunk(m, minimumChunk: 2048) { _, range in
                    crf_blur(path, source, target, neighbours, Int64(width), Int64(range.lowerBound),
                             Int64(range.upperBound))
                }
                swap(&old, &new)
            }
            blurred[index] = old
        }

        /// Q[pixel] = softmax(log p + Σ_kernels weight × normalisation × slice(blurred)), pixel chunks in
        /// parallel.
        private func sliceAndNormalise() {
            let (width, k, unary, q, path) = (width, classCount, unary, q, path.cValue)
            let views = views(lattices: blurred)
            views.withUnsafeBufferPointer { views in
                let (pointer, count) = (views.baseAddress!, Int32(views.count))
                Parallel.forEachChunk(pointCount, minimumChunk: 4096) { _, range in
                    crf_slice_softmax(path, pointer, count, unary, q, Int64(width), Int64(k),
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
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") }) else {
        return Parallel.processorCount
    }
    let bits = line.dropFirst("Cpus_allowed:".count).compactMap { $0.hexDigitValue?.nonzeroBitCount }
    return max(1, min(bits.reduce(0, +), Parallel.processorCount))
}()
