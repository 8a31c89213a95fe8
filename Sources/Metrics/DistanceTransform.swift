import SliceLabSupport

/// The exact Euclidean distance transform in linear time, anisotropic, 2-D and 3-D.
///
/// Felzenszwalb & Huttenlocher, "Distance Transforms of Sampled Functions", Theory of Computing 8 (2012):
/// a two-scan pass along the contiguous axis, then the lower envelope of parabolas along each other axis.
/// Lines are processed in parallel. Distances are between voxel centres, in millimetres, as SciPy's
/// `distance_transform_edt(~features, sampling=spacing)` (which MONAI and medpy call).
public enum DistanceTransform {
    /// The squared distance (mm²) from every voxel to the nearest feature voxel; +∞ everywhere when there is
    /// no feature.
    ///
    /// - Parameters:
    ///   - features: row-major booleans over `shape`.
    ///   - shape: `[rows, columns]` or `[slices, rows, columns]`.
    ///   - spacing: mm per axis, same order.
    /// - Precondition: 2 or 3 axes and matching counts (checked by `LabelGrid<UInt16>` upstream).
    public static func squaredDistances(features: [Bool], shape: [Int], spacing: [Double]) -> [Double] {
        precondition(
            (2...3).contains(shape.count) && spacing.count == shape.count
                && features.count == shape.reduce(1, *), "distance transform: inconsistent shape")
        let extents = shape.count == 3 ? shape : [1] + shape
        let steps = spacing.count == 3 ? spacing : [1] + spacing
        var output = [Double](repeating: .infinity, count: features.count)
        output.withUnsafeMutableBufferPointer { out in
            features.withUnsafeBufferPointer { feat in
                contiguousPass(feat, out, lines: extents[0] * extents[1], length: extents[2], step: steps[2])
            }
            envelopePass(out, outer: extents[0], length: extents[1], inner: extents[2], step: steps[1])
            envelopePass(out, outer: 1, length: extents[0], inner: extents[1] * extents[2], step: steps[0])
        }
        return output
    }

    /// Squared distances to the nearest feature along each contiguous line (two scans).
    private static func contiguousPass(
        _ features: UnsafeBufferPointer<Bool>, _ out: UnsafeMutableBufferPointer<Double>,
        lines: Int, length: Int, step: Double
    ) {
        let workers = Swift.min(Parallel.processorCount, Swift.max(1, lines * length / 65_536))
        Parallel.forEach(workers) { worker in
            let first = lines * worker / workers
            let last = lines * (worker + 1) / workers
            for line in first..<last {
                let base = line * length
                var previous = -1
                for i in 0..<length where features[base + i] {
                    // Fill [previous+1, i): nearest is previous (if any) or i.
                    for j in (previous + 1)..<i {
                        let toNext = Double(i - j)
                        let toPrevious = previous >= 0 ? Double(j - previous) : .infinity
                        let d = Swift.min(toNext, toPrevious) * step
                        out[base + j] = d * d
                    }
                    out[base + i] = 0
                    previous = i
                }
                if previous >= 0 {
                    for j in (previous + 1)..<length {
                        let d = Double(j - previous) * step
                        out[base + j] = d * d
                    }
                }
            }
        }
    }

    /// The lower envelope of parabolas along an axis of `length` voxels with `inner` voxels between
    /// neighbours, for `outer` blocks. Each worker takes a range of inner offsets so strided reads share
    /// cache lines.
    private static func envelopePass(
        _ data: UnsafeMutableBufferPointer<Double>, outer: Int, length: Int,
        inner: Int, step: Double
    ) {
        guard length > 1 else { return }
        let columnsPerTask = 16
        let tasksPerBlock = (inner + columnsPerTask - 1) / columnsPerTask
        let tasks = outer * tasksPerBlock
        let workers = Swift.min(Parallel.processorCount, tasks)
        let weight = step * step
        Parallel.forEach(workers) { worker in
            let line = UnsafeMutablePointer<Double>.allocate(capacity: length)
            let result = UnsafeMutablePointer<Double>.allocate(capacity: length)
            let vertices = UnsafeMutablePointer<Int>.allocate(capacity: length)
            let boundaries = UnsafeMutablePointer<Double>.allocate(capacity: length + 1)
            // A tile of `columnsPerTask` neighbouring lines, copied row by row so strided reads stay few.
            let tile = UnsafeMutablePointer<Double>.allocate(capacity: length * columnsPerTask)
            defer {
                line.deallocate()
                result.deallocate()
                vertices.deallocate()
                boundaries.deallocate()
                tile.deallocate()
            }
            guard let base = data.baseAddress else { return }
            var task = worker
            while task < tasks {
                let block = task / tasksPerBlock
                let firstColumn = (task % tasksPerBlock) * columnsPerTask
                let width = Swift.min(inner, firstColumn + columnsPerTask) - firstColumn
                let start = base + block * length * inner + firstColumn
                for i in 0..<length { (tile + i * width).update(from: start + i * inner, count: width) }
                for column in 0..<width {
                    for i in 0..<length { line[i] = tile[i * width + column] }
                    lowerEnvelope(line, result, vertices, boundaries, count: length, weight: weight)
                    for i in 0..<length { tile[i * width + column] = result[i] }
                }
                for i in 0..<length { (start + i * inner).update(from: tile + i * width, count: width) }
                task += workers
            }
        }
    }

    /// d(q) = min_p f(p) + w(q−p)², over the finite entries of f (all +∞ when none is finite); `v` and `z` are
    /// scratch of `count` and `count + 1` elements.
    static func lowerEnvelope(
        _ f: UnsafePointer<Double>, _ d: UnsafeMutablePointer<Double>,
        _ v: UnsafeMutablePointer<Int>, _ z: UnsafeMutablePointer<Double>,
        count n: Int, weight w: Double
    ) {
        var k = -1
        for q in 0..<n where f[q].isFinite {
            let fq = f[q] + w * Double(q) * Double(q)
            var s = -Double.infinity
            while k >= 0 {
                let p = v[k]
                s = (fq - (f[p] + w * Double(p) * Double(p))) / (2 * w * Double(q - p))
                if s <= z[k] { k -= 1 } else { break }
            }
            k += 1
            v[k] = q
            z[k] = k == 0 ? -.infinity : s
            z[k + 1] = .infinity
        }
        guard k >= 0 else {
            for q in 0..<n { d[q] = .infinity }
            return
        }
        k = 0
        for q in 0..<n {
            let position = Double(q)
            while z[k + 1] < position { k += 1 }
            let offset = Double(q - v[k])
            d[q] = w * offset * offset + f[v[k]]
        }
    }
}
