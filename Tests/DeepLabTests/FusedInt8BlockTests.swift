import CFusedBlocks
import DeepLabTestSupport
import SliceLabSupport
import Testing

@testable import DeepLab

/// An int8 inverted-residual block in one pass (`FusedInt8Block`) must give the integers its three quantised units
/// give on oneDNN one after the other: it runs on AVX-512 VNNI only, and says so where the CPU (or the process's
/// oneDNN ISA) lacks it.
@Suite struct FusedInt8BlockTests {
    /// The fusion, or nil with the reason printed.
    static func fusion() -> FusedInt8Block? {
        guard let fusion = FusedInt8Block() else {
            print(
                "FusedInt8BlockTests: skipped: int8 blocks run on AVX-512 VNNI, and this process's oneDNN ISA is "
                    + "\(oneDNNEffectiveISA) (the CPU \(cfused_int8_supported() != 0 ? "has" : "lacks") it)")
            return nil
        }
        return fusion
    }

    /// `block` quantised as `DeepLabV3.apply` quantises a block: each unit's input scale from its input's largest
    /// magnitude in float32 on `x` (u8 after the ReLU6 units, `entry` at the block's entry), weights per output
    /// channel, each unit but the last writing the next one's input, the identity in the entry's quantisation, the
    /// output quantised as `output` (f32 when nil).
    static func quantize(_ block: InvertedResidual, on x: Tensor, entry: QuantizedType, output: QuantizedType?) throws {
        block.fusion = nil
        block.int8Fusion = nil
        var y = x
        var ranges: [Float] = []
        for unit in block.units {
            ranges.append(try y.floatTensor().values.map(abs).max() ?? 1)
            y = try unit(y, training: false)
        }
        let outputRange = try block(x, training: false).floatTensor().values.map(abs).max() ?? 1
        for (i, unit) in block.units.enumerated() {
            let (w, _) = unit.foldedPlainWeights()
            let perChannel = w.count / unit.conv.outputChannels
            let type = i == 0 ? entry : .u8
            unit.quantization = UnitQuantization(
                inputType: type, inputScale: type.levels / ranges[i],
                weightScales: (0..<unit.conv.outputChannels).map { o in
                    127 / (w[(o * perChannel)..<((o + 1) * perChannel)].map(abs).max() ?? 1)
                })
        }
        for (unit, next) in zip(block.units, block.units.dropFirst()) { unit.quantizedOutput = next.quantization }
        block.entryQuantization = block.units[0].quantization
        let last = block.units[block.units.count - 1]
        last.quantizedResidual = block.usesResidual ? block.entryQuantization : nil
        last.quantizedOutput = output.map {
            UnitQuantization(inputType: $0, inputScale: $0.levels / outputRange, weightScales: [])
        }
    }

    /// The output's values: integers as they are (not dequantised), or f32.
    static func values(_ y: Tensor, _ type: QuantizedType?) throws -> [Float] {
        guard let type else { return try y.floatTensor().values }
        let plain = try Tensor(desc: .make(y.shape, MemoryDesc.plainTag(rank: 4)))
        try Int8Operations.dequantize(y, into: plain, scale: 1)
        #expect(Int8Operations.holds(y, type))
        return try plain.floatTensor().values
    }

    @Test(arguments: [
        // A residual at stride 1, s8 at the entry and out; channels in whole vectors.
        (inputs: 16, outputs: 16, stride: 1, dilation: 1, expansion: 6, batch: 1, rows: 9, columns: 11, output: "s8"),
        // Stride 2 on an odd extent, channels in neither whole vectors nor fours, two images, f32 out.
        (inputs: 22, outputs: 40, stride: 2, dilation: 1, expansion: 6, batch: 2, rows: 13, columns: 10, output: "f32"),
        // Dilated residuals, a dilation past half the map; u8 out.
        (inputs: 32, outputs: 32, stride: 1, dilation: 2, expansion: 6, batch: 1, rows: 7, columns: 12, output: "s8"),
        (inputs: 40, outputs: 40, stride: 1, dilation: 4, expansion: 6, batch: 1, rows: 3, columns: 5, output: "f32"),
        (inputs: 24, outputs: 48, stride: 1, dilation: 1, expansion: 6, batch: 1, rows: 6, columns: 17, output: "u8"),
        // No expansion (MobileNetV2's first block, u8 at its entry), a 1 × 1 map, a wide projection (k 960).
        (inputs: 32, outputs: 16, stride: 1, dilation: 1, expansion: 1, batch: 2, rows: 5, columns: 6, output: "s8"),
        (inputs: 8, outputs: 8, stride: 1, dilation: 1, expansion: 6, batch: 1, rows: 1, columns: 1, output: "s8"),
        (inputs: 160, outputs: 160, stride: 1, dilation: 2, expansion: 6, batch: 1, rows: 5, columns: 25, output: "s8")
    ])
    func givesTheUnitsIntegers(
        _ c: (
            inputs: Int, outputs: Int, stride: Int, dilation: Int, expansion: Int, batch: Int, rows: Int,
            columns: Int, output: String
        )
    ) throws {
        guard let fusion = Self.fusion() else { return }
        let block = FusedInvertedResidualTests.block(
            inputs: c.inputs, outputs: c.outputs, stride: c.stride, dilation: c.dilation, expansion: c.expansion,
            seed: UInt64(c.inputs + c.rows))
        let shape = [c.batch, c.inputs, c.rows, c.columns]
        let entry: QuantizedType = c.expansion == 1 ? .u8 : .s8
        let x = try Tensor(
            plain: shape,
            values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: UInt64(c.columns)).map {
                entry == .u8 ? 3 * abs($0) : 3 * $0
            })
        let output = QuantizedType(rawValue: c.output)
        try Self.quantize(block, on: x, entry: entry, output: output)
        #expect(FusedInt8Block.fits(block))
        let reference = try Self.values(block(x, training: false), output)
        block.int8Fusion = fusion
        let fused = try Self.values(block(x, training: false), output)
        #expect(fused.count == reference.count)
        let scale = reference.map(abs).max() ?? 0
        let differences = zip(fused, reference).map { abs($0 - $1) }
        // Integers: identical (each unit's epilogue is oneDNN's in float32, the sums exact); f32: up to the identity's
        // one fused multiply-add.
        let tolerance = output == nil ? 1e-5 * scale : 0
        let worst = differences.max() ?? .infinity
        #expect(scale > 0 && worst <= tolerance, "\(c): max |Δ| \(worst) of \(scale)")
    }

    /// A quantised DeepLabV3+ over MobileNetV2 gives the same logits with every block fused in int8.
    @Test func quantisedModelGivesTheSameLogits() throws {
        guard let fusion = Self.fusion() else { return }
        let model = try QuantizationTests.model(.mobilenetV2, decoder: .v3plus)
        try model.apply(QuantizationTests.quantized(model, method: .percentile))
        let blocks = try #require(model.backbone as? MobileNetV2).blocks
        #expect(blocks.allSatisfy { FusedInt8Block.fits($0) })
        let input = QuantizationTests.inputs(count: 5)[4]
        for block in blocks { block.int8Fusion = nil }
        let reference = try model.forward(input, training: false)
        for block in blocks { block.int8Fusion = fusion }
        let fused = try model.forward(input, training: false)
        let difference = zip(fused.values, reference.values).map { abs($0 - $1) }.max() ?? .infinity
        let scale = reference.values.map(abs).max() ?? 0
        #expect(scale > 0.1 && difference <= 1e-5 * scale, "max |Δ| \(difference) against \(scale)")
    }

    /// What it leaves to the units: a float32 block, a block whose units are observed for calibration.
    @Test func leavesFloatAndObservedBlocks() throws {
        let block = FusedInvertedResidualTests.block(
            inputs: 16, outputs: 16, stride: 1, dilation: 1, expansion: 6, seed: 4)
        #expect(!FusedInt8Block.fits(block))
        let x = try Tensor(plain: [1, 16, 4, 4], values: ConvolutionStrategyTests.values(256, seed: 2))
        try Self.quantize(block, on: x, entry: .s8, output: .s8)
        #expect(FusedInt8Block.fits(block))
        block.entryQuantization = nil
        #expect(!FusedInt8Block.fits(block))
    }
}
