// Bilinear resampling with `align_corners=True` (PyTorch's `nn.Upsample(..., align_corners=True)`, ONNX's
// `coordinate_transformation_mode = "align_corners"`): the corner pixels of input and output coincide. oneDNN's
// resampling knows only half-pixel centres, so this one is computed here, on plain NCHW, a plane per task.

/// One output coordinate's two source taps along an axis and the second one's weight.
private struct Taps {
    let first: Int
    let second: Int
    let weight: Float

    /// PyTorch's `area_pixel_compute_scale` with `align_corners`: source = destination × (in − 1) / (out − 1).
    static func along(input: Int, output: Int) -> [Taps] {
        let scale = output > 1 ? Float(input - 1) / Float(output - 1) : 0
        return (0..<output).map { o in
            let source = scale * Float(o)
            let first = min(Int(source), input - 1)
            return Taps(first: first, second: min(first + 1, input - 1), weight: source - Float(first))
        }
    }
}

extension Operations {
    /// `x` [N, C, h, w] (f32, any layout) resized to [N, C, height, width] with aligned corners, plain NCHW.
    static func resizeAlignedCorners(_ x: Tensor, height: Int, width: Int) throws -> Tensor {
        let s = x.shape
        let input = try x.reordered(to: .make(s, MemoryDesc.plainTag(rank: 4)))
        let output = try Tensor(desc: .make([s[0], s[1], height, width], MemoryDesc.plainTag(rank: 4)))
        let rows = Taps.along(input: s[2], output: height)
        let columns = Taps.along(input: s[3], output: width)
        let (inPlane, outPlane) = (s[2] * s[3], height * width)
        input.withStorage { source in
            output.withStorage { target in
                concurrentForEach(0..<(s[0] * s[1])) { plane in
                    let from = source.baseAddress! + plane * inPlane
                    let to = target.baseAddress! + plane * outPlane
                    for (r, row) in rows.enumerated() {
                        let top = from + row.first * s[3]
                        let bottom = from + row.second * s[3]
                        for (c, column) in columns.enumerated() {
                            let upper = top[column.first] + column.weight * (top[column.second] - top[column.first])
                            let lower =
                                bottom[column.first] + column.weight * (bottom[column.second] - bottom[column.first])
                            to[r * width + c] = upper + row.weight * (lower - upper)
                        }
                    }
                }
            }
        }
        return output
    }

    /// The backward of `resizeAlignedCorners`: dLoss/dx [N, C, h, w] (`sourceShape`, plain) from dLoss/dy.
    static func resizeAlignedCornersBackward(_ dy: Tensor, sourceShape s: [Int]) throws -> Tensor {
        let (height, width) = (dy.shape[2], dy.shape[3])
        let gradient = try dy.reordered(to: .make(dy.shape, MemoryDesc.plainTag(rank: 4)))
        let output = try Tensor.zeros(like: .make(s, MemoryDesc.plainTag(rank: 4)))
        let rows = Taps.along(input: s[2], output: height)
        let columns = Taps.along(input: s[3], output: width)
        let (inPlane, outPlane) = (s[2] * s[3], height * width)
        gradient.withStorage { source in
            output.withStorage { target in
                concurrentForEach(0..<(s[0] * s[1])) { plane in
                    let from = source.baseAddress! + plane * outPlane
                    let to = target.baseAddress! + plane * inPlane
                    for (r, row) in rows.enumerated() {
                        let top = to + row.first * s[3]
                        let bottom = to + row.second * s[3]
                        for (c, column) in columns.enumerated() {
                            let g = from[r * width + c]
                            let (upper, lower) = (g * (1 - row.weight), g * row.weight)
                            top[column.first] += upper * (1 - column.weight)
                            top[column.second] += upper * column.weight
                            bottom[column.first] += lower * (1 - column.weight)
                            bottom[column.second] += lower * column.weight
                        }
                    }
                }
            }
        }
        return output
    }
}
