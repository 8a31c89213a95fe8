import CFusedBlocks
import SliceLabSupport
import Testing

@testable import DeepLab

/// Eval mode may compute depthwise 3 × 3 convolutions on our own kernel (`OwnDepthwiseConvolution`); it must give
/// oneDNN's direct convolution's result to float32 rounding on every instruction set of the kernels this CPU runs.
@Suite struct OwnDepthwiseTests {
    @Test(arguments: [
        (channels: 16, stride: 1, dilation: 1, batch: 1, rows: 9, columns: 11, activation: Activation.relu6),
        (channels: 40, stride: 2, dilation: 1, batch: 2, rows: 13, columns: 10, activation: .relu6),
        (channels: 24, stride: 2, dilation: 1, batch: 1, rows: 1, columns: 2, activation: .none),
        // Dilated: most taps of rate 6 on 8 × 7 read padding.
        (channels: 48, stride: 1, dilation: 6, batch: 1, rows: 8, columns: 7, activation: .relu),
        (channels: 72, stride: 1, dilation: 2, batch: 2, rows: 7, columns: 12, activation: .relu6),
        // Wide enough for the blocked outputs (8 or 4 outputs d apart) and a tail; ASPP's rate 12 on 30 × 25.
        (channels: 40, stride: 1, dilation: 2, batch: 1, rows: 5, columns: 37, activation: .relu6),
        (channels: 32, stride: 1, dilation: 12, batch: 1, rows: 30, columns: 25, activation: .relu),
        (channels: 8, stride: 1, dilation: 1, batch: 1, rows: 1, columns: 1, activation: .none),
        // Rate 36 past the whole 30 × 25 map (only the centre tap reads the input; a part vector of channels), and
        // rate 24 (rows and columns partly in the padding).
        (channels: 20, stride: 1, dilation: 36, batch: 2, rows: 30, columns: 25, activation: .relu6),
        (channels: 20, stride: 1, dilation: 24, batch: 1, rows: 30, columns: 25, activation: .relu)
    ])
    func agreesWithOneDNN(
        _ c: (
            channels: Int, stride: Int, dilation: Int, batch: Int, rows: Int, columns: Int, activation: Activation
        )
    ) throws {
        var generator = SeededGenerator(seed: UInt64(c.channels + c.dilation))
        let unit = ConvUnit(
            "dw", "bn", inputChannels: c.channels, outputChannels: c.channels, kernelSize: 3, stride: c.stride,
            padding: c.dilation, dilation: c.dilation, groups: c.channels, activation: c.activation,
            generator: &generator)
        let norm = try #require(unit.norm)
        norm.weight.value = ConvolutionStrategyTests.values(c.channels, seed: 4).map { 1 + 0.5 * $0 }
        norm.bias.value = ConvolutionStrategyTests.values(c.channels, seed: 5).map { 0.5 * $0 }
        norm.runningMean.value = ConvolutionStrategyTests.values(c.channels, seed: 6).map { 0.2 * $0 }
        norm.runningVariance.value = ConvolutionStrategyTests.values(c.channels, seed: 7).map { 1 + 0.5 * $0 }
        #expect(OwnDepthwiseConvolution.fits(unit))
        let shape = [c.batch, c.channels, c.rows, c.columns]
        let x = try Tensor(
            plain: shape, values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 8).map { 8 * $0 })
        let reference = try unit(x, training: false, strategy: DirectConvolution()).floatTensor()
        for isa in FusedInvertedResidualTests.instructionSets {
            let own = try #require(OwnDepthwiseConvolution(isa: isa))
            let y = try unit(x, training: false, strategy: own).floatTensor()
            #expect(y.shape == reference.shape)
            let difference = zip(y.values, reference.values).map { abs($0 - $1) }.max() ?? .infinity
            let scale = reference.values.map(abs).max() ?? 0
            #expect(scale > 0.5 && difference <= 1e-5 * scale, "\(isa): max |Δ| \(difference) against \(scale)")
        }
    }

    /// It takes dilated depthwise convolutions with most taps in the padding (where oneDNN 2.6 copies a much larger
    /// padded input): DeepLabV3+'s ASPP branches at rates 12 and 18 on a 30 × 25 map, not rate 6 there, not
    /// MobileNetV2's dilation 4 on 117 × 99, not undilated ones, not in training.
    @Test func takesTheDilatedOnesWithMostTapsInThePadding() throws {
        let own = try #require(
            OwnDepthwiseConvolution(isa: FusedInvertedResidualTests.instructionSets.first ?? cfused_avx2))
        func unit(_ dilation: Int) -> ConvUnit {
            var generator = SeededGenerator(seed: 1)
            return ConvUnit(
                "dw", "bn", inputChannels: 16, outputChannels: 16, kernelSize: 3, padding: dilation,
                dilation: dilation, groups: 16, activation: .relu, generator: &generator)
        }
        let aspp = [1, 16, 30, 25]
        for (dilation, shape, expected) in [
            (12, aspp, true), (18, aspp, true), (6, aspp, false), (4, [1, 16, 117, 99], false), (1, aspp, false)
        ] {
            #expect(own.applies(to: unit(dilation), inputShape: shape, residual: false, training: false) == expected)
        }
        #expect(!own.applies(to: unit(12), inputShape: aspp, residual: false, training: true))
    }
}
