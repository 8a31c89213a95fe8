import SliceLabSupport
import Testing

@testable import DeepLab

/// The fp32 strategy table per effective ISA (issue #19): AVX2's measured entry keeps padding-free rectangles and
/// Winograd; AVX-512 and AMX (unmeasured) and unknown ISAs get oneDNN's kernels only; a unit's strategies follow
/// its table.
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
        for isa in ["AVX512_CORE", "AVX512_CORE_VNNI", "AVX512_CORE_BF16", "AVX512_CORE_AMX", "SSE41", "new ISA"] {
            #expect(ConvolutionStrategyTable.forISA(isa) == .oneDNN, "\(isa)")
        }
        #expect(ConvolutionStrategyTable.effective == .forISA(oneDNNEffectiveISA))
    }

    /// A rate-6 3×3 convolution on 32 × 32 (a third of its taps read padding): padding-free rectangles under
    /// AVX2's entry, oneDNN's direct convolution under AMX's; both give the same numbers to float32 rounding.
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
            #expect(!unit.strategies.contains { $0 is WinogradConvolution } == (isa != "AVX2"), "\(isa)")
            outputs.append(try unit(Tensor(plain: shape, values: values), training: false).floatTensor().values)
        }
        let scale = outputs[1].map(abs).max() ?? 0
        let difference = zip(outputs[0], outputs[1]).map { abs($0 - $1) }.max() ?? .infinity
        #expect(scale > 0.1 && difference <= 1e-5 * scale, "max |Δ| \(difference) against \(scale)")
    }
}
