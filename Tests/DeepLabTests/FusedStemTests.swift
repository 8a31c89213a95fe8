import CFusedBlocks
import DeepLabTestSupport
import SliceLabSupport
import Testing

@testable import DeepLab

/// Eval mode may compute MobileNetV2's input upscale, stem and first block in one pass (`FusedStem`); it must give
/// what the half-pixel resize, the stem (oneDNN's convolution) and the block give one after the other, to float32
/// rounding, on every instruction set of the kernels this CPU runs.
@Suite struct FusedStemTests {
    /// A MobileNetV2 backbone with seeded weights and batch-norm statistics far from the identity.
    static func backbone(inputChannels: Int, widthMultiplier: Double, seed: UInt64) throws -> MobileNetV2 {
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: 2, inputChannels: inputChannels, outputStride: 8,
                atrousRates: [2, 4], asppChannels: 8, widthMultiplier: widthMultiplier, seed: seed))
        DeterministicWeights.fill(model)
        return try #require(model.backbone as? MobileNetV2)
    }

    @Test(arguments: [
        // The bundled models' case: one channel, × 2; then × 1 (no resize), × 3 and × 4 on odd extents, a slice
        // with its context (3 channels), a stem of 24 channels (not whole AVX-512 vectors), two images, factors
        // that are not integers, and a single pixel.
        (channels: 1, width: 1.0, batch: 1, rows: 12, columns: 9, upscaled: (24, 18)),
        (channels: 1, width: 1.0, batch: 1, rows: 11, columns: 7, upscaled: (11, 7)),
        (channels: 1, width: 0.75, batch: 2, rows: 7, columns: 10, upscaled: (21, 30)),
        (channels: 3, width: 1.0, batch: 1, rows: 5, columns: 6, upscaled: (20, 24)),
        (channels: 2, width: 0.35, batch: 2, rows: 9, columns: 13, upscaled: (23, 17)),
        (channels: 1, width: 1.0, batch: 1, rows: 1, columns: 1, upscaled: (2, 2))
    ])
    func agreesWithTheResizeTheStemAndTheBlock(
        _ c: (channels: Int, width: Double, batch: Int, rows: Int, columns: Int, upscaled: (Int, Int))
    ) throws {
        let backbone = try Self.backbone(inputChannels: c.channels, widthMultiplier: c.width, seed: UInt64(c.rows))
        let (stem, first) = (backbone.stem, backbone.blocks[0])
        let shape = [c.batch, c.channels, c.rows, c.columns]
        // Inputs up to ±3, so that ReLU6 clips some of the stem's and the depthwise's values.
        let x = try Tensor(
            plain: shape,
            values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: UInt64(c.columns)).map { 3 * $0 })
        first.fusion = nil
        let upscaled = try Operations.resizeHalfPixel(x, height: c.upscaled.0, width: c.upscaled.1)
        let reference = try first(stem(upscaled, training: false), training: false).floatTensor()
        for isa in FusedInvertedResidualTests.instructionSets {
            let fusion = try #require(FusedInvertedResidual(isa: isa, always: true))
            #expect(FusedStem.fits(stem, first, fusion: fusion, stemOutput: stem.conv.outputDims(upscaled.shape)))
            first.fusion = fusion
            let stemFusion = FusedStem()
            let fused = try stemFusion(stem, first, fusion: fusion, x, upscaledTo: c.upscaled).floatTensor()
            #expect(fused.shape == reference.shape)
            let difference = zip(fused.values, reference.values).map { abs($0 - $1) }.max() ?? .infinity
            let scale = reference.values.map(abs).max() ?? 0
            #expect(scale > 0.5 && difference <= 1e-5 * scale, "\(isa): max |Δ| \(difference) against \(scale)")
        }
    }

    /// A whole DeepLabV3+ model at input scale 2, as the bundled ones run: the same logits with the stem fused as
    /// without, and the stem's pass named in the profile.
    @Test func wholeModelAgreesFusedAndUnfused() throws {
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, decoder: .v3plus, classCount: 3, inputChannels: 1, outputStride: 8,
                atrousRates: [2, 4], asppChannels: 16, widthMultiplier: 0.35, seed: 4, inputScale: 2))
        DeterministicWeights.fill(model)
        let backbone = try #require(model.backbone as? MobileNetV2)
        let shape = [2, 1, 19, 14]
        let input = FloatTensor(
            shape: shape, values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 6).map { 2 * $0 })
        for isa in FusedInvertedResidualTests.instructionSets {
            for block in backbone.blocks { block.fusion = FusedInvertedResidual(isa: isa, always: true) }
            backbone.stemFusion = nil
            let reference = try model.forward(input, training: false)
            backbone.stemFusion = FusedStem()
            model.resetMultiplyAddCount()
            let fused = try DeepLabV3.profilingLayers { try model.forward(input, training: false) }
            let difference = zip(fused.values, reference.values).map { abs($0 - $1) }.max() ?? .infinity
            let scale = reference.values.map(abs).max() ?? 0
            #expect(scale > 0.1 && difference <= 1e-4 * scale, "\(isa): max |Δ| \(difference) against \(scale)")
            #expect(model.layerProfiles.first?.strategy == "fused-stem")
        }
    }

    /// What the stem fusion leaves to the units: a quantised stem, and a first block that does not fuse.
    @Test func leavesWhatItDoesNotTake() throws {
        let backbone = try Self.backbone(inputChannels: 1, widthMultiplier: 1, seed: 2)
        let (stem, first) = (backbone.stem, backbone.blocks[0])
        let isa = try #require(FusedInvertedResidualTests.instructionSets.first)
        let fusion = try #require(FusedInvertedResidual(isa: isa, always: true))
        let dims = [1, 32, 20, 20]
        #expect(FusedStem.fits(stem, first, fusion: fusion, stemOutput: dims))
        #expect(!FusedStem.fits(stem, backbone.blocks[1], fusion: fusion, stemOutput: dims))  // expands
        stem.inputObserver = { _ in }
        #expect(!FusedStem.fits(stem, first, fusion: fusion, stemOutput: dims))
    }
}
