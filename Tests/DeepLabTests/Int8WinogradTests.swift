import Foundation
import SliceLabSupport
import Testing

@testable import DeepLab

/// The exact int8 Winograd F(4×4, 3×3) and F(2×2, 3×3) (`Int8Winograd`, AVX2 kernels) against oneDNN's direct
/// int8 convolution on the same quantised unit: the same output to the last bit, for dilations 1 to 3, extents
/// that are not multiples of the tiles, a batch of two, output channels that do not fill the kernels' groups of
/// 64, f32 and quantised (u8, s8) outputs, ReLU, ReLU6 and no activation; F(2×2) where the sums could outgrow
/// F(4×4)'s exact range, the direct convolution beyond F(2×2)'s.
@Suite struct Int8WinogradTests {
    /// A quantised 3×3 unit with a folded batch norm, and u8 inputs of up to 7 bits after quantisation.
    static func unit(
        channels: Int, outputs: Int, dilation: Int, activation: Activation,
        output: QuantizedType?, seed: UInt64
    ) throws -> ConvUnit {
        var generator = SeededGenerator(seed: seed)
        let unit = ConvUnit(
            "conv", "bn", inputChannels: channels, outputChannels: outputs, kernelSize: 3,
            padding: dilation, dilation: dilation, activation: activation, generator: &generator)
        let norm = try #require(unit.norm)
        norm.bias.value = (0..<outputs).map { 0.3 * Float($0 % 5) - 0.6 }
        norm.runningVariance.value = (0..<outputs).map { 0.5 + 0.05 * Float($0 % 7) }
        let (w, _) = unit.foldedPlainWeights()
        let perChannel = w.count / outputs
        unit.quantization = UnitQuantization(
            inputType: .u8, inputScale: 255 / 2,
            weightScales: (0..<outputs).map { k in 127 / w[(k * perChannel)..<((k + 1) * perChannel)].map(abs).max()! })
        unit.quantizedOutput = output.map {
            UnitQuantization(inputType: $0, inputScale: $0.levels / 3, weightScales: [])
        }
        return unit
    }

    static func input(_ shape: [Int]) -> [Float] {
        (0..<shape.reduce(1, *)).map { i -> Float in
            let wave: Double = sin(Double(i) * 0.61) * cos(Double(i) * 0.017)
            return Float(abs(wave)) * 2
        }
    }

    @Test(arguments: [
        (
            dilation: 1, rows: 13, columns: 11, batch: 2, outputs: 144, activation: Activation.relu,
            output: QuantizedType?.some(.u8)
        ),
        (dilation: 2, rows: 9, columns: 20, batch: 1, outputs: 128, activation: .relu6, output: nil),
        (dilation: 3, rows: 16, columns: 7, batch: 1, outputs: 160, activation: .none, output: .s8)
    ])
    func winogradEqualsTheDirectInt8Convolution(
        _ c: (
            dilation: Int, rows: Int, columns: Int, batch: Int,
            outputs: Int, activation: Activation,
            output: QuantizedType?
        )
    ) throws {
        guard Int8Winograd.supported else {
            print("skipped: this CPU has no AVX2, which the int8 Winograd kernels need")
            return
        }
        let unit = try Self.unit(
            channels: 128, outputs: c.outputs, dilation: c.dilation, activation: c.activation,
            output: c.output, seed: UInt64(c.dilation))
        let shape = [c.batch, 128, c.rows, c.columns]
        let winograd = Int8Convolution(winograd: true)
        let fast = try unit(Tensor(plain: shape, values: Self.input(shape)), training: false, strategy: winograd)
        let direct = try unit(
            Tensor(plain: shape, values: Self.input(shape)), training: false,
            strategy: Int8Convolution())
        #expect(winograd.winograd?.lastTile == 4, "F(4×4) ran")
        let a = try fast.floatTensor()
        let b = try direct.floatTensor()
        #expect(a.shape == b.shape)
        #expect(Set(b.values).count > 10, "a non-trivial output")
        let differing = zip(a.values, b.values).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) of \(a.values.count) outputs differ (dilation \(c.dilation))")
    }

    /// A dilated convolution planned as padding-free rectangles (rate 4 on 40 × 40: an eighth of the taps read
    /// padding) computes its all-taps centre, 32 × 32, by Winograd and the rest by oneDNN: the same output as
    /// one direct convolution of the whole.
    @Test func theRectanglesAllTapsCentreByWinogradEqualsTheDirectConvolution() throws {
        guard Int8Winograd.supported else {
            print("skipped: this CPU has no AVX2, which the int8 Winograd kernels need")
            return
        }
        let unit = try Self.unit(channels: 128, outputs: 128, dilation: 4, activation: .relu, output: .u8, seed: 7)
        let shape = [1, 128, 40, 40]
        let plan = try #require(PaddingFreeConvolution.plan(for: unit, inputShape: shape))
        #expect(plan.rows.contains { $0.taps == 0...2 && $0.outputs == 4..<36 })
        let strategy = Int8Convolution(rectangles: true, winograd: true)
        let fast = try unit(Tensor(plain: shape, values: Self.input(shape)), training: false, strategy: strategy)
        let direct = try unit(
            Tensor(plain: shape, values: Self.input(shape)), training: false,
            strategy: Int8Convolution())
        #expect(strategy.winograd?.lastTile == 4, "the Winograd centre ran")
        let a = try fast.floatTensor().values
        let b = try direct.floatTensor().values
        #expect(Set(b).count > 10, "a non-trivial output")
        let differing = zip(a, b).filter { $0 != $1 }.count
        #expect(a.count == b.count && differing == 0, "\(differing) of \(a.count) outputs differ")
    }

    /// The tile size follows the bound on the sums (Σ|w| per input channel × that channel's largest input): 512
    /// channels of ±127 weights (1143 a channel, sums bounded by about 7 · 10⁷ with inputs near 127) take F(2×2);
    /// 8192 (past 2²⁹) are left to oneDNN's direct convolution. The output is the direct convolution's either way.
    @Test(arguments: [(channels: 512, tile: Int32(2)), (channels: 8192, tile: 0)])
    func largerWeightSumsTakeSmallerTilesOrTheDirectConvolution(_ c: (channels: Int, tile: Int32)) throws {
        guard Int8Winograd.supported else {
            print("skipped: this CPU has no AVX2, which the int8 Winograd kernels need")
            return
        }
        let unit = try Self.unit(
            channels: c.channels, outputs: 128, dilation: 1, activation: .relu, output: nil,
            seed: 4)
        unit.conv.weight.value = unit.conv.weight.value.map { $0 < 0 ? -1 : 1 }
        let shape = [1, c.channels, 5, 6]
        let winograd = Int8Convolution(winograd: true)
        let fast = try unit(Tensor(plain: shape, values: Self.input(shape)), training: false, strategy: winograd)
        let direct = try unit(
            Tensor(plain: shape, values: Self.input(shape)), training: false,
            strategy: Int8Convolution())
        #expect(winograd.winograd?.lastTile == c.tile)
        let a = try fast.floatTensor().values
        let b = try direct.floatTensor().values
        #expect(Set(b).count > 10, "a non-trivial output")
        #expect(a.count == b.count && zip(a, b).allSatisfy { $0 == $1 })
    }
}
