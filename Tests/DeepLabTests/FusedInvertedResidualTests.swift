import CFusedBlocks
import DeepLabTestSupport
import ImageFiles
import SliceLabSupport
import Testing

@testable import DeepLab

/// Eval mode may compute a MobileNetV2 inverted-residual block in one pass (`FusedInvertedResidual`); it must give
/// the three units' result (oneDNN's convolutions, one after the other) to float32 rounding, on every instruction
/// set of the kernels this CPU runs.
@Suite struct FusedInvertedResidualTests {
    /// The kernels' instruction sets this CPU runs; the others are named as skipped.
    static let instructionSets: [cfused_isa] = {
        let supported = cfused_supported()
        return [cfused_avx512, cfused_avx2].filter { isa in
            let runs = supported & (1 << isa.rawValue) != 0
            if !runs {
                print(
                    "FusedInvertedResidualTests: \(isa == cfused_avx512 ? "AVX-512" : "AVX2") skipped: not on this CPU")
            }
            return runs
        }
    }()

    /// A block with seeded weights and batch-norm statistics far from the identity.
    static func block(
        inputs: Int, outputs: Int, stride: Int, dilation: Int, expansion: Int, seed: UInt64
    ) -> InvertedResidual {
        var generator = SeededGenerator(seed: seed)
        let block = InvertedResidual(
            prefix: "backbone.5", inputChannels: inputs, outputChannels: outputs, stride: stride, dilation: dilation,
            expansion: expansion, generator: &generator)
        for (i, unit) in block.units.enumerated() {
            guard let norm = unit.norm else { continue }
            let n = norm.channels
            let s = seed * 10 + UInt64(i) * 4
            norm.weight.value = ConvolutionStrategyTests.values(n, seed: s).map { 1 + 0.5 * $0 }
            norm.bias.value = ConvolutionStrategyTests.values(n, seed: s + 1).map { 0.5 * $0 }
            norm.runningMean.value = ConvolutionStrategyTests.values(n, seed: s + 2).map { 0.2 * $0 }
            norm.runningVariance.value = ConvolutionStrategyTests.values(n, seed: s + 3).map { 1 + 0.5 * $0 }
        }
        return block
    }

    @Test(arguments: [
        // Residual, stride 1; channels in whole vectors.
        (inputs: 16, outputs: 16, stride: 1, dilation: 1, expansion: 6, batch: 1, rows: 9, columns: 11),
        // Stride 2 on an odd extent, channels not in whole vectors, two images.
        (inputs: 24, outputs: 40, stride: 2, dilation: 1, expansion: 6, batch: 2, rows: 13, columns: 10),
        (inputs: 24, outputs: 32, stride: 2, dilation: 1, expansion: 6, batch: 1, rows: 1, columns: 2),
        // Dilated, residual; dilation 4 beyond half the map (whole rows of taps in the padding).
        (inputs: 32, outputs: 32, stride: 1, dilation: 2, expansion: 6, batch: 1, rows: 7, columns: 12),
        (inputs: 16, outputs: 16, stride: 1, dilation: 2, expansion: 6, batch: 1, rows: 6, columns: 41),
        (inputs: 64, outputs: 96, stride: 1, dilation: 4, expansion: 6, batch: 2, rows: 10, columns: 9),
        (inputs: 40, outputs: 40, stride: 1, dilation: 4, expansion: 6, batch: 1, rows: 3, columns: 5),
        // No expansion (MobileNetV2's first block), a 1 × 1 map, an odd expansion's hidden width.
        (inputs: 32, outputs: 16, stride: 1, dilation: 1, expansion: 1, batch: 2, rows: 5, columns: 6),
        (inputs: 8, outputs: 8, stride: 1, dilation: 1, expansion: 6, batch: 1, rows: 1, columns: 1),
        (inputs: 24, outputs: 24, stride: 1, dilation: 1, expansion: 5, batch: 1, rows: 6, columns: 17)
    ])
    func agreesWithTheUnitsOneAfterTheOther(
        _ c: (
            inputs: Int, outputs: Int, stride: Int, dilation: Int, expansion: Int, batch: Int, rows: Int,
            columns: Int
        )
    ) throws {
        let block = Self.block(
            inputs: c.inputs, outputs: c.outputs, stride: c.stride, dilation: c.dilation, expansion: c.expansion,
            seed: UInt64(c.inputs + c.rows))
        #expect(FusedInvertedResidual.fits(block))
        let shape = [c.batch, c.inputs, c.rows, c.columns]
        // Inputs up to ±3, so that ReLU6 clips some expanded values.
        let x = try Tensor(
            plain: shape,
            values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: UInt64(c.columns)).map { 3 * $0 })
        block.fusion = nil
        let reference = try block(x, training: false).floatTensor()
        for isa in Self.instructionSets {
            block.fusion = FusedInvertedResidual(isa: isa, always: true)
            let fused = try block(x, training: false).floatTensor()
            #expect(fused.shape == reference.shape)
            let difference = zip(fused.values, reference.values).map { abs($0 - $1) }.max() ?? .infinity
            let scale = reference.values.map(abs).max() ?? 0
            #expect(scale > 0.5 && difference <= 1e-5 * scale, "\(isa): max |Δ| \(difference) against \(scale)")
        }
    }

    /// A whole MobileNetV2 model (width 0.35: channel counts not in whole vectors; output stride 8: dilations 2 and
    /// 4; two odd-sized images) gives the same logits with every block fused as unfused.
    @Test(arguments: [DeepLabConfiguration.Decoder.v3, .v3plus])
    func wholeModelAgreesFusedAndUnfused(_ decoder: DeepLabConfiguration.Decoder) throws {
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, decoder: decoder, classCount: 3, inputChannels: 1, outputStride: 8,
                atrousRates: [2, 4], asppChannels: 16, widthMultiplier: 0.35, seed: 3))
        DeterministicWeights.fill(model)
        let blocks = try #require(model.backbone as? MobileNetV2).blocks
        #expect(blocks.allSatisfy { FusedInvertedResidual.fits($0) })
        let shape = [2, 1, 37, 29]
        let input = FloatTensor(
            shape: shape, values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 5).map { 2 * $0 })
        for block in blocks { block.fusion = nil }
        let reference = try model.forward(input, training: false)
        for isa in Self.instructionSets {
            for block in blocks { block.fusion = FusedInvertedResidual(isa: isa, always: true) }
            let fused = try model.forward(input, training: false)
            let difference = zip(fused.values, reference.values).map { abs($0 - $1) }.max() ?? .infinity
            let scale = reference.values.map(abs).max() ?? 0
            #expect(scale > 0.1 && difference <= 1e-4 * scale, "\(isa): max |Δ| \(difference) against \(scale)")
        }
    }

    /// The unfused traffic a block would save decides: MobileNetV2's second block (16 → 96 → 24, stride 2) moves a
    /// byte per 2.2 multiply-adds unfused and is fused; 64 → 384 → 64 (7.9) is not, nor its last (160 → 960 → 320,
    /// 27), though all three fit the kernels.
    @Test func fusesTheMemoryBoundBlocksOnly() throws {
        let second = Self.block(inputs: 16, outputs: 24, stride: 2, dilation: 1, expansion: 6, seed: 1)
        let middle = Self.block(inputs: 64, outputs: 64, stride: 1, dilation: 2, expansion: 6, seed: 2)
        let last = Self.block(inputs: 160, outputs: 320, stride: 1, dilation: 4, expansion: 6, seed: 3)
        #expect(abs(FusedInvertedResidual.unfusedIntensity(second) - 9312.0 / 4192) < 1e-9)
        #expect(abs(FusedInvertedResidual.unfusedIntensity(middle) - 52608.0 / (4 * 1664)) < 1e-9)
        #expect(abs(FusedInvertedResidual.unfusedIntensity(last) - 469_440.0 / (4 * 4320)) < 1e-9)
        let fusion = try #require(FusedInvertedResidual(isa: Self.instructionSets.first ?? cfused_avx2))
        #expect([second, middle, last].map { fusion.takes($0, inputShape: [1, 16, 9, 9]) } == [true, false, false])
        #expect([second, middle, last].allSatisfy { FusedInvertedResidual.fits($0) })
    }

    /// Under `--precision bf16` a block still fuses, in float32, where its expanded tensor outgrows
    /// `bf16ExpandedBytes` (the units would stream it through memory even at half the bytes), and gives the float32
    /// block's result there; a smaller one runs its units in bf16. The size, not the block, decides.
    @Test func fusesBf16BlocksInFloat32WhereTheExpandedTensorOutgrowsTheCache() throws {
        let block = Self.block(inputs: 16, outputs: 24, stride: 2, dilation: 1, expansion: 6, seed: 4)
        let fusion = try #require(FusedInvertedResidual(isa: Self.instructionSets.first ?? cfused_avx2))
        // 96 expanded channels: 4 MiB of float32 at 10 923 pixels.
        let (small, large) = ([1, 16, 64, 64], [1, 16, 105, 105])
        #expect(96 * 64 * 64 * 4 <= FusedInvertedResidual.bf16ExpandedBytes)
        #expect(96 * 105 * 105 * 4 > FusedInvertedResidual.bf16ExpandedBytes)
        #expect(fusion.takes(block, inputShape: small) && fusion.takes(block, inputShape: large))
        let x = try Tensor(
            plain: large, values: ConvolutionStrategyTests.values(large.reduce(1, *), seed: 9).map { 3 * $0 })
        block.fusion = fusion
        let float32 = try block(x, training: false).floatTensor()
        for unit in block.units { unit.bf16 = .emulated }
        #expect(!fusion.takes(block, inputShape: small) && fusion.takes(block, inputShape: [2, 16, 75, 75]))
        #expect(fusion.takes(block, inputShape: large))
        #expect(try block(x, training: false).floatTensor() == float32)
    }

    /// A separable convolution (DeepLabV3+'s ASPP branches and decoder: depthwise 3 × 3 without bias, then 1 × 1 with
    /// batch norm and ReLU) fused gives its two units' result, dilated far into the padding or not, channels in whole
    /// vectors or not, and a 1 280-channel input whose 1 × 1 goes in blocks of k.
    @Test(arguments: [
        (channels: 40, outputs: 24, dilation: 1, batch: 2, rows: 9, columns: 11),
        (channels: 64, outputs: 64, dilation: 2, batch: 1, rows: 7, columns: 12),
        (channels: 1280, outputs: 32, dilation: 12, batch: 1, rows: 30, columns: 25),
        (channels: 96, outputs: 40, dilation: 36, batch: 2, rows: 30, columns: 25)
    ])
    func separableConvolutionAgreesWithItsUnits(
        _ c: (channels: Int, outputs: Int, dilation: Int, batch: Int, rows: Int, columns: Int)
    ) throws {
        var generator = SeededGenerator(seed: UInt64(c.channels))
        let units = separableConvolution(
            "decoder.aspp.0.convs.1.0", norm: "decoder.aspp.0.convs.1.1", inputChannels: c.channels,
            outputChannels: c.outputs, dilation: c.dilation, generator: &generator)
        let norm = try #require(units[1].norm)
        norm.weight.value = ConvolutionStrategyTests.values(c.outputs, seed: 1).map { 1 + 0.5 * $0 }
        norm.bias.value = ConvolutionStrategyTests.values(c.outputs, seed: 2).map { 0.5 * $0 }
        norm.runningMean.value = ConvolutionStrategyTests.values(c.outputs, seed: 3).map { 0.2 * $0 }
        norm.runningVariance.value = ConvolutionStrategyTests.values(c.outputs, seed: 4).map { 1 + 0.5 * $0 }
        let shape = [c.batch, c.channels, c.rows, c.columns]
        let x = try Tensor(
            plain: shape, values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 7).map { 3 * $0 })
        units[0].separableFusion = nil
        let reference = try forwardChain(units, x, training: false).floatTensor()
        let separable = SeparableConvolution(units: units)
        #expect(separable.name == "decoder.aspp.0.convs.1.0" && FusedInvertedResidual.fits(separable))
        for isa in Self.instructionSets {
            units[0].separableFusion = FusedInvertedResidual(isa: isa, always: true)
            let fused = try forwardChain(units, x, training: false).floatTensor()
            #expect(fused.shape == reference.shape)
            let difference = zip(fused.values, reference.values).map { abs($0 - $1) }.max() ?? .infinity
            let scale = reference.values.map(abs).max() ?? 0
            #expect(scale > 0.5 && difference <= 1e-5 * scale, "\(isa): max |Δ| \(difference) against \(scale)")
        }
    }

    /// Where this process's table entry fuses only the large rates (AVX-512), ASPP's rates 12 and 18 on 30 × 25 fuse
    /// and rate 6 and the undilated ones do not; where it fuses every rate (AVX2), all do.
    @Test func fusesTheSeparableConvolutionsOfLargeRatesOrEveryRateAsTheTableSays() throws {
        var generator = SeededGenerator(seed: 1)
        let pays = { (dilation: Int) in
            SeparableConvolution(
                units: separableConvolution(
                    "s", norm: "n", inputChannels: 16, outputChannels: 8, dilation: dilation, generator: &generator)
            ).fusionPays(inputShape: [1, 16, 30, 25])
        }
        let everyRate = ConvolutionStrategyTable.effective.separablesFusedAtEveryRate
        #expect([1, 6, 12, 18].map(pays) == [everyRate, everyRate, true, true])
    }
}
