import SliceLabSupport
import Testing

@testable import DeepLab

/// The fp32 strategy table per effective ISA (issue #19): AVX2's measured entry keeps padding-free rectangles and
/// Winograd, and the own depthwise kernel; AVX-512 gets oneDNN's kernels, the own depthwise kernel and fused
/// inverted-residual blocks, AMX too with dilated int8 convolutions on oneDNN's brgconv kernels; unknown ISAs oneDNN's
/// kernels only; a unit's strategies follow its table.
@Suite struct ConvolutionStrategyTableTests {
    static func dilatedUnit(_ table: ConvolutionStrategyTable) -> ConvUnit {
        var generator = SeededGenerator(seed: 3)
        let conv = Conv2d(
            name: "conv", inputChannels: 256, outputChannels: 256, kernelSize: 3, stride: 1,
            padding: 6, dilation: 6, groups: 1, bias: false, generator: &generator)
        return ConvUnit(conv: conv, norm: nil, activation: .relu, strategyTable: table)
    }

    @Test func avx2KeepsItsMeasuredStrategiesAndAVX512TakesOneDNNs() {
        let avx2 = ConvolutionStrategyTable.forISA("AVX2")
        #expect(avx2.paddingFreeRectangles && avx2.winograd && avx2.int8Winograd && avx2.measured)
        #expect(avx2.fusedInvertedResiduals && avx2.separablesFusedAtEveryRate && avx2.ownDepthwise)
        #expect(avx2.winogradTile == 4)
        var avx512 = ConvolutionStrategyTable.oneDNN
        (avx512.fusedInvertedResiduals, avx512.ownDepthwise) = (true, true)
        (avx512.winograd, avx512.winogradMinimumInsideShare, avx512.winogradTile) = (true, 0.9, 4)
        #expect(ConvolutionStrategyTable.forISA("AVX512_CORE") == avx512)
        var measured = avx512
        measured.measured = true
        #expect(ConvolutionStrategyTable.forISA("AVX512_CORE_VNNI") == measured)
        measured.winogradBeforeBf16 = true
        #expect(ConvolutionStrategyTable.forISA("AVX512_CORE_BF16") == measured)
        for isa in ["SSE41", "new ISA"] { #expect(ConvolutionStrategyTable.forISA(isa) == .oneDNN, "\(isa)") }
        var amx = avx512
        (amx.int8DilatedOnBrgconv, amx.int8NarrowPointwiseOffAMX) = (true, true)
        #expect(ConvolutionStrategyTable.forISA("AVX512_CORE_AMX") == amx)
        #expect(ConvolutionStrategyTable.effective == .forISA(oneDNNEffectiveISA))
    }

    /// A rate-6 3×3 convolution on 32 × 32 (a third of its taps read padding): padding-free rectangles under
    /// AVX2's entry, oneDNN's direct convolution under AMX's, whose Winograd takes only convolutions with nearly
    /// every tap inside (dilation 2 there: 92 %); both give the same numbers to float32 rounding.
    @Test func aUnitsStrategiesFollowItsTable() throws {
        let shape = [1, 256, 32, 32]
        let values = ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 12)
        var outputs: [[Float]] = []
        for (isa, expected) in [("AVX2", "PaddingFreeConvolution"), ("AVX512_CORE_AMX", "DirectConvolution")] {
            let unit = Self.dilatedUnit(.forISA(isa))
            let chosen = unit.strategies.first {
                $0.applies(to: unit, inputShape: shape, residual: false, training: false)
            }
            #expect(chosen.map { "\(type(of: $0))" } == expected, "\(isa)")
            #expect(unit.strategies.contains { $0 is WinogradConvolution }, "\(isa)")
            outputs.append(try unit(Tensor(plain: shape, values: values), training: false).floatTensor().values)
        }
        let scale = outputs[1].map(abs).max() ?? 0
        let difference = zip(outputs[0], outputs[1]).map { abs($0 - $1) }.max() ?? .infinity
        #expect(scale > 0.1 && difference <= 1e-5 * scale, "max |Δ| \(difference) against \(scale)")
        var generator = SeededGenerator(seed: 3)
        let dilated2 = ConvUnit(
            conv: Conv2d(
                name: "conv", inputChannels: 256, outputChannels: 256, kernelSize: 3, stride: 1, padding: 2,
                dilation: 2, groups: 1, bias: false, generator: &generator),
            norm: nil, activation: .relu, strategyTable: .forISA("AVX512_CORE_AMX"))
        #expect(abs(dilated2.insideShare(inputShape: shape) - (92.0 / 96) * (92.0 / 96)) < 1e-12)
        let chosen = dilated2.strategies.first {
            $0.applies(to: dilated2, inputShape: shape, residual: false, training: false)
        }
        #expect(chosen is WinogradConvolution)
    }

    /// A bf16 unit that Winograd takes (dilation 2 on 32 × 32: 92 % of its taps inside): under `AVX512_CORE_BF16`'s
    /// entry it runs Winograd in float32 in eval mode and bf16 in training; under AMX's, bf16 in both. The eval
    /// outputs of the two stay within bf16's rounding of each other (emulated bf16, so on any CPU).
    @Test func winogradTakesBf16UnitsWhereTheTableSays() throws {
        let shape = [1, 256, 32, 32]
        let values = ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 13)
        var outputs: [[Float]] = []
        for (isa, eval) in [("AVX512_CORE_BF16", "WinogradConvolution"), ("AVX512_CORE_AMX", "Bf16Convolution")] {
            var generator = SeededGenerator(seed: 3)
            let unit = ConvUnit(
                conv: Conv2d(
                    name: "conv", inputChannels: 256, outputChannels: 256, kernelSize: 3, stride: 1, padding: 2,
                    dilation: 2, groups: 1, bias: false, generator: &generator),
                norm: nil, activation: .relu, strategyTable: .forISA(isa))
            unit.bf16 = .emulated
            let chosen = { (training: Bool) in
                unit.strategies.first { $0.applies(to: unit, inputShape: shape, residual: false, training: training) }
                    .map { "\(type(of: $0))" }
            }
            #expect(chosen(false) == eval, "\(isa)")
            #expect(chosen(true) == "Bf16Convolution", "\(isa)")
            outputs.append(try unit(Tensor(plain: shape, values: values), training: false).floatTensor().values)
        }
        let scale = outputs[1].map(abs).max() ?? 0
        let difference = zip(outputs[0], outputs[1]).map { abs($0 - $1) }.max() ?? .infinity
        #expect(scale > 0.1 && difference <= 2e-2 * scale && difference > 0, "max |Δ| \(difference) against \(scale)")
    }

    /// A quantised rate-6 unit under AMX's entry and under oneDNN's defaults: the same outputs bit for bit; where
    /// oneDNN runs AMX, the entry's unit does not run on oneDNN's `jit:avx512_core_amx_int8` kernel (elsewhere
    /// that kernel does not exist, and the two units are the same).
    @Test func dilatedInt8OnBrgconvGivesTheSameOutputs() throws {
        let shape = [1, 256, 32, 32]
        let values = ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 13).map(abs)
        var outputs: [[Float]] = []
        for table in [ConvolutionStrategyTable.forISA("AVX512_CORE_AMX"), .oneDNN] {
            let unit = Self.dilatedUnit(table)
            let weights = unit.conv.weight.value
            let perChannel = weights.count / 256
            unit.quantization = UnitQuantization(
                inputType: .u8, inputScale: 255 / (values.max() ?? 1),
                weightScales: (0..<256).map { k in
                    127 / (weights[(k * perChannel)..<((k + 1) * perChannel)].map(abs).max() ?? 1)
                })
            let output = try DeepLabV3.profilingLayers {
                try unit(Tensor(plain: shape, values: values), training: false).floatTensor().values
            }
            outputs.append(output)
            let kernels = unit.profile?.implementations ?? []
            #expect(!kernels.isEmpty)
            if table.int8DilatedOnBrgconv && oneDNNEffectiveISA == "AVX512_CORE_AMX" {
                #expect(!kernels.contains("jit:avx512_core_amx_int8"), "\(kernels)")
            }
        }
        #expect(outputs[0] == outputs[1] && outputs[0].contains { $0 != 0 })
    }

    /// Narrow 1 × 1 int8 units (few multiply-adds per byte: MobileNetV2's 16 → 96 expansion, 144 → 24 projection)
    /// run off AMX under AMX's entry and give oneDNN's default outputs bit for bit; a wide one keeps AMX's kernels
    /// (where the CPU has them; elsewhere both units run the same kernels).
    @Test(arguments: [(16, 96, true), (144, 24, true), (1280, 64, false)])
    func narrowInt8PointwiseOffAMXGivesTheSameOutputs(inputs: Int, outputs: Int, narrow: Bool) throws {
        let shape = [1, inputs, 23, 19]
        let values = ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 14).map(abs)
        var results: [[Float]] = []
        for table in [ConvolutionStrategyTable.forISA("AVX512_CORE_AMX"), .oneDNN] {
            var generator = SeededGenerator(seed: 4)
            let conv = Conv2d(
                name: "conv", inputChannels: inputs, outputChannels: outputs, kernelSize: 1, stride: 1, padding: 0,
                dilation: 1, groups: 1, bias: false, generator: &generator)
            #expect(Int8Convolution.isNarrowPointwise(conv, quantizedOutput: true) == narrow)
            let unit = ConvUnit(conv: conv, norm: nil, activation: .relu, strategyTable: table)
            let weights = unit.conv.weight.value
            unit.quantization = UnitQuantization(
                inputType: .u8, inputScale: 255 / (values.max() ?? 1),
                weightScales: (0..<outputs).map { k in
                    127 / (weights[(k * inputs)..<((k + 1) * inputs)].map(abs).max() ?? 1)
                })
            results.append(
                try DeepLabV3.profilingLayers {
                    try unit(Tensor(plain: shape, values: values), training: false).floatTensor().values
                })
            let kernels = unit.profile?.implementations ?? []
            if table.int8NarrowPointwiseOffAMX && oneDNNEffectiveISA == "AVX512_CORE_AMX" {
                #expect(kernels.contains { $0.contains("amx") } == !narrow, "\(kernels)")
            }
        }
        #expect(results[0] == results[1] && results[0].contains { $0 != 0 })
    }
}
