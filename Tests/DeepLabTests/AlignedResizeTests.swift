import SliceLabSupport
import Testing

@testable import DeepLab

/// DeepLabV3+'s decoder joins the ASPP output, resized with aligned corners, to the projected low-level features in
/// one channels-last pass (`Operations.resizeAlignedCorners(_:joining:)`); it must give exactly the values of the
/// plain resize followed by a concatenation, and PyTorch's `align_corners=True` interpolation.
@Suite struct AlignedResizeTests {
    @Test(arguments: [
        // DeepLabV3+'s × 4 on odd sizes, two images; a downscale; a single row and column; a 1 × 1 source.
        (batch: 2, channels: 5, rows: 4, columns: 7, joined: 3, height: 13, width: 25),
        (batch: 1, channels: 17, rows: 9, columns: 6, joined: 1, height: 4, width: 5),
        (batch: 1, channels: 3, rows: 1, columns: 1, joined: 2, height: 3, width: 2),
        (batch: 1, channels: 16, rows: 2, columns: 3, joined: 8, height: 1, width: 7)
    ])
    func joinedResizeEqualsResizeThenConcatenate(
        _ c: (batch: Int, channels: Int, rows: Int, columns: Int, joined: Int, height: Int, width: Int)
    ) throws {
        let shape = [c.batch, c.channels, c.rows, c.columns]
        let otherShape = [c.batch, c.joined, c.height, c.width]
        let plain = try Tensor(
            plain: shape, values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: UInt64(c.channels)))
        // The source arrives channels last, as a convolution leaves it.
        let x = try plain.reordered(to: .make(shape, .channelsLast))
        let other = try Tensor(
            plain: otherShape, values: ConvolutionStrategyTests.values(otherShape.reduce(1, *), seed: 99))
        let joined = try Operations.resizeAlignedCorners(x, joining: other)
        #expect(joined.desc.isEqual(to: try .make([c.batch, c.channels + c.joined, c.height, c.width], .channelsLast)))
        let expected = try Operations.concatenate([
            Operations.resizeAlignedCorners(plain, height: c.height, width: c.width), other
        ]).floatTensor()
        #expect(try joined.floatTensor() == expected)
        // In u8 for an int8 unit: what oneDNN's quantising reorder makes of the f32 join, byte for byte (values up
        // to ±1 at scale 400: both ends saturate).
        let quantized = try Operations.resizeAlignedCorners(x, joining: other, quantizedWith: 400)
        let reference = try Int8Operations.quantize(joined, into: quantized.desc, scale: 400)
        #expect(Int8Operations.holds(quantized, .u8))
        let bytes = { (t: Tensor) in
            t.withStorage { Array(UnsafeRawBufferPointer(start: $0.baseAddress, count: t.desc.byteCount)) }
        }
        #expect(bytes(quantized) == bytes(reference))
        #expect(Set(bytes(quantized)).isSuperset(of: [0, 255]))
        // PyTorch's interpolation (source = destination · (in − 1) / (out − 1)) in float64.
        let values = try plain.floatTensor().values
        let result = expected.values
        func source(_ o: Int, _ input: Int, _ output: Int) -> (Int, Int, Double) {
            let s = output > 1 ? Double(o) * Double(input - 1) / Double(output - 1) : 0
            let first = min(Int(s), input - 1)
            return (first, min(first + 1, input - 1), s - Double(first))
        }
        var largest = 0.0
        for n in 0..<c.batch {
            for k in 0..<c.channels {
                for y in 0..<c.height {
                    let (y0, y1, wy) = source(y, c.rows, c.height)
                    for x in 0..<c.width {
                        let (x0, x1, wx) = source(x, c.columns, c.width)
                        let at = { (r: Int, q: Int) in
                            Double(values[((n * c.channels + k) * c.rows + r) * c.columns + q])
                        }
                        let top = at(y0, x0) * (1 - wx) + at(y0, x1) * wx
                        let bottom = at(y1, x0) * (1 - wx) + at(y1, x1) * wx
                        let reference = top * (1 - wy) + bottom * wy
                        let got = Double(result[((n * (c.channels + c.joined) + k) * c.height + y) * c.width + x])
                        largest = max(largest, abs(got - reference))
                    }
                }
            }
        }
        #expect(largest < 1e-6, "max |Δ| \(largest) from PyTorch's formula in float64")
    }

    /// The input upscale (`Operations.resizeHalfPixel`) computes what oneDNN's linear resampling computes (PyTorch's
    /// `align_corners=False`), to float32 rounding: integer and fractional factors, up and down, two images.
    @Test(arguments: [(2, 3, 97, 131, 291, 393), (1, 1, 233, 197, 466, 394), (1, 2, 9, 7, 4, 20)])
    func halfPixelResizeMatchesOneDNN(
        batch: Int, channels: Int, rows: Int, columns: Int, height: Int, width: Int
    ) throws {
        let shape = [batch, channels, rows, columns]
        let x = try Tensor(
            plain: shape, values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: UInt64(rows)))
        let ours = try Operations.resizeHalfPixel(x, height: height, width: width).floatTensor()
        let oneDNN = try Operations.resizeBilinear(x, height: height, width: width, training: false).0.floatTensor()
        #expect(ours.shape == oneDNN.shape)
        let difference = zip(ours.values, oneDNN.values).map { abs($0 - $1) }.max() ?? .infinity
        #expect(difference <= 1e-6, "max |Δ| \(difference)")
        print("resizeHalfPixel \(shape) -> \(height) × \(width): max |Δ| \(difference) from oneDNN")
    }
}
