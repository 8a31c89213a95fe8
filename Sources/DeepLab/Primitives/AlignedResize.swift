import COneDNN

// Bilinear resampling with `align_corners=True` (PyTorch's `nn.Upsample(..., align_corners=True)`, ONNX's
// `coordinate_transformation_mode = "align_corners"`): the corner pixels of input and output coincide. oneDNN's
// resampling knows only half-pixel centres, so this one is computed here, on plain NCHW, a row per task (or channels
// last, where it joins DeepLabV3+'s low-level features; the backward a plane per task). The input's half-pixel upscale
// is here too.

/// One output coordinate's two source taps along an axis and the second one's weight.
struct ResizeTaps {
    let first: Int
    let second: Int
    let weight: Float

    /// PyTorch's `align_corners=False`: source = (destination + 0.5) / F − 0.5 with the factor F = out / in, clamped
    /// to the first pixel below and the last above, in float32 as oneDNN's linear resampling and ONNX Runtime's
    /// `Resize` compute it (float32 coordinates near 100 are off by up to 4e-6 pixels, so the same arithmetic
    /// matters for the same values).
    static func halfPixel(input: Int, output: Int) -> [ResizeTaps] {
        let factor = Float(output) / Float(input)
        return (0..<output).map { o in
            let source = max(0, (Float(o) + 0.5) / factor - 0.5)
            let first = min(Int(source), input - 1)
            return ResizeTaps(first: first, second: min(first + 1, input - 1), weight: source - Float(first))
        }
    }

    /// PyTorch's `area_pixel_compute_scale` with `align_corners`: source = destination × (in − 1) / (out − 1).
    static func along(input: Int, output: Int) -> [ResizeTaps] {
        let scale = output > 1 ? Float(input - 1) / Float(output - 1) : 0
        return (0..<output).map { o in
            let source = scale * Float(o)
            let first = min(Int(source), input - 1)
            return ResizeTaps(first: first, second: min(first + 1, input - 1), weight: source - Float(first))
        }
    }
}

/// A resize from plain [N, C, h, w] (`source`) to plain [N, C, height, width] (`target`): the taps along each axis,
/// and the pairs of planes, visited in parallel.
private struct AlignedResize {
    let source: Tensor
    let target: Tensor
    let rows: [ResizeTaps]
    let columns: [ResizeTaps]

    init(source: Tensor, target: Tensor) {
        (self.source, self.target) = (source, target)
        rows = ResizeTaps.along(input: source.shape[2], output: target.shape[2])
        columns = ResizeTaps.along(input: source.shape[3], output: target.shape[3])
    }

    /// `body(sourcePlane, targetPlane)` for every (sample, channel).
    func forEachPlane(_ body: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Void) {
        let (s, t) = (source.shape, target.shape)
        let (sourcePlane, targetPlane) = (s[2] * s[3], t[2] * t[3])
        source.withStorage { from in
            target.withStorage { to in
                concurrentForEach(0..<(s[0] * s[1])) { plane in
                    body(from.baseAddress! + plane * sourcePlane, to.baseAddress! + plane * targetPlane)
                }
            }
        }
    }
}

/// `count` values of the row `top + weight · (bottom − top)`: the first half of a bilinear interpolation.
@inline(__always)
private func blend(
    _ top: UnsafePointer<Float>, _ bottom: UnsafePointer<Float>, _ weight: Float, _ count: Int,
    into blended: UnsafeMutableBufferPointer<Float>
) {
    for q in 0..<count { blended[q] = top[q] + weight * (bottom[q] - top[q]) }
}

/// round(v · scale) saturated to u8, as oneDNN's quantising reorder writes it: clamped, then rounded half to even by
/// adding 1.5 · 2²³, whose last mantissa bit is 1, so the integer sits in the low bits (no conversion that could trap).
@inline(__always)
private func quantizedU8(_ value: Float, _ scale: Float) -> UInt8 {
    UInt8(truncatingIfNeeded: (min(max(value * scale, 0), 255) + 12_582_912).bitPattern)
}

extension Operations {
    /// `x` [N, C, h, w] (f32, any layout) resized to [N, C, height, width] with aligned corners, plain NCHW.
    static func resizeAlignedCorners(_ x: Tensor, height: Int, width: Int) throws -> Tensor {
        try resized(x, height: height, width: width, taps: ResizeTaps.along)
    }

    /// `x` [N, C, h, w] (f32, any layout) resized to [N, C, height, width] with half-pixel centres
    /// (`resizeBilinear`'s arithmetic, PyTorch's `align_corners=False`), plain NCHW. Eval mode's input upscale:
    /// oneDNN 2.6's resampling ran the bundled model's 1-channel × 2 in 0.31–0.58 ms a slice on the AMX Xeon.
    static func resizeHalfPixel(_ x: Tensor, height: Int, width: Int) throws -> Tensor {
        try resized(x, height: height, width: width, taps: ResizeTaps.halfPixel)
    }

    /// `x` resized with `taps` along each axis, plain NCHW, a row per task (a plane per task left one of two threads
    /// idle for a third of the bundled model's 3-class logits): each output row blends its two source rows once, then
    /// interpolates along it.
    private static func resized(
        _ x: Tensor, height: Int, width: Int, taps: (_ input: Int, _ output: Int) -> [ResizeTaps]
    ) throws -> Tensor {
        let s = x.shape
        let source = try x.reordered(to: .make(s, MemoryDesc.plainTag(rank: 4)))
        let output = try Tensor(desc: .make([s[0], s[1], height, width], MemoryDesc.plainTag(rank: 4)))
        let (rows, columns) = (taps(s[2], height), taps(s[3], width))
        source.withStorage { from in
            output.withStorage { to in
                concurrentForEach(0..<(s[0] * s[1] * height)) { task in
                    let (plane, r) = task.quotientAndRemainder(dividingBy: height)
                    let row = rows[r]
                    let top = from.baseAddress! + (plane * s[2] + row.first) * s[3]
                    let bottom = from.baseAddress! + (plane * s[2] + row.second) * s[3]
                    let target = to.baseAddress! + task * width
                    withUnsafeTemporaryAllocation(of: Float.self, capacity: s[3]) { blended in
                        blend(top, bottom, row.weight, s[3], into: blended)
                        for (c, column) in columns.enumerated() {
                            let left = blended[column.first]
                            target[c] = left + column.weight * (blended[column.second] - left)
                        }
                    }
                }
            }
        }
        return output
    }

    /// `x` [N, C, h, w] (f32, any layout) resized with aligned corners to `other`'s height and width and joined along
    /// the channels with `other` [N, D, height, width]: [N, C + D, height, width] channels last (DeepLabV3+'s decoder
    /// input), in one pass. The same values as `concatenate([resizeAlignedCorners(x, …), other])` (the same sums),
    /// without the plain copies in between; the channels innermost, so the interpolation runs along them. With
    /// `scale`, in u8 for the int8 unit that reads the join: round(v · scale) saturated, what oneDNN's quantising
    /// reorder of the f32 join writes (`AlignedResizeTests`), without the f32 join written and read back.
    static func resizeAlignedCorners(_ x: Tensor, joining other: Tensor, quantizedWith scale: Float? = nil) throws
        -> Tensor
    {
        let (s, o) = (x.shape, other.shape)
        let (c, d, height, width) = (s[1], o[1], o[2], o[3])
        let source = try x.reordered(to: .make(s, .channelsLast))
        let appended = try other.reordered(to: .make(o, .channelsLast))
        let output = try Tensor(
            desc: .make([s[0], c + d, height, width], .channelsLast, scale == nil ? dnnl_f32 : dnnl_u8))
        let (rows, columns) = (
            ResizeTaps.along(input: s[2], output: height), ResizeTaps.along(input: s[3], output: width)
        )
        let rowValues = width * (c + d)
        source.withStorage { from in
            appended.withStorage { tail in
                output.withStorage { to in
                    concurrentForEach(0..<(s[0] * height)) { task in
                        let (n, r) = task.quotientAndRemainder(dividingBy: height)
                        let row = rows[r]
                        let top = from.baseAddress! + (n * s[2] + row.first) * s[3] * c
                        let bottom = from.baseAddress! + (n * s[2] + row.second) * s[3] * c
                        let extra = UnsafePointer(tail.baseAddress! + task * width * d)
                        // The row in f32: straight into the output, or into a buffer quantised below.
                        func interpolate(into target: UnsafeMutablePointer<Float>) {
                            withUnsafeTemporaryAllocation(of: Float.self, capacity: s[3] * c) { buffer in
                                let blended = buffer.baseAddress!
                                blend(top, bottom, row.weight, s[3] * c, into: buffer)
                                // Offset pointers, so that the loop along the channels has no index arithmetic to
                                // check and vectorises.
                                for (q, column) in columns.enumerated() {
                                    let (a, b, w) = (
                                        blended + column.first * c, blended + column.second * c, column.weight
                                    )
                                    let (joined, appended) = (target + q * (c + d), target + q * (c + d) + c)
                                    let tail = extra + q * d
                                    for k in 0..<c { joined[k] = a[k] + w * (b[k] - a[k]) }
                                    // A loop, not `update(from:count:)`: a `memmove` call a pixel cost more than
                                    // copying its 48 values.
                                    for k in 0..<d { appended[k] = tail[k] }
                                }
                            }
                        }
                        guard let scale else { return interpolate(into: to.baseAddress! + task * rowValues) }
                        withUnsafeTemporaryAllocation(of: Float.self, capacity: rowValues) { buffer in
                            interpolate(into: buffer.baseAddress!)
                            let bytes =
                                UnsafeMutableRawPointer(to.baseAddress!).assumingMemoryBound(to: UInt8.self)
                                + task * rowValues
                            for i in 0..<rowValues { bytes[i] = quantizedU8(buffer[i], scale) }
                        }
                    }
                }
            }
        }
        return output
    }

    /// The backward of `resizeAlignedCorners`: dLoss/dx [N, C, h, w] (`sourceShape`, plain) from dLoss/dy, each
    /// output gradient spread back onto the four inputs it was interpolated from.
    static func resizeAlignedCornersBackward(_ dy: Tensor, sourceShape s: [Int]) throws -> Tensor {
        let width = dy.shape[3]
        let resize = AlignedResize(
            source: try Tensor.zeros(like: .make(s, MemoryDesc.plainTag(rank: 4))),
            target: try dy.reordered(to: .make(dy.shape, MemoryDesc.plainTag(rank: 4))))
        resize.forEachPlane { dx, gradient in
            for (r, row) in resize.rows.enumerated() {
                let (top, bottom) = (dx + row.first * s[3], dx + row.second * s[3])
                for (c, column) in resize.columns.enumerated() {
                    let g = gradient[r * width + c]
                    let (upper, lower) = (g * (1 - row.weight), g * row.weight)
                    top[column.first] += upper * (1 - column.weight)
                    top[column.second] += upper * column.weight
                    bottom[column.first] += lower * (1 - column.weight)
                    bottom[column.second] += lower * column.weight
                }
            }
        }
        return resize.source
    }
}
