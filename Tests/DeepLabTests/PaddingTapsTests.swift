import Foundation
import SliceLabSupport
import Testing

@testable import DeepLab

/// Eval mode computes dilated 3×3 convolutions without the taps that read only padding; the result must be the
/// whole convolution's.
@Suite struct PaddingTapsTests {
    @Test func axesAreCutWhereTheOuterTapsLeaveTheInput() {
        #expect(
            TapInterval.intervals(extent: 64, rate: 36) == [
                TapInterval(outputs: 0..<28, taps: 1...2), TapInterval(outputs: 28..<36, taps: 1...1),
                TapInterval(outputs: 36..<64, taps: 0...1)
            ])
        #expect(
            TapInterval.intervals(extent: 64, rate: 12) == [
                TapInterval(outputs: 0..<12, taps: 1...2), TapInterval(outputs: 12..<52, taps: 0...2),
                TapInterval(outputs: 52..<64, taps: 0...1)
            ])
        #expect(TapInterval.intervals(extent: 10, rate: 12) == [TapInterval(outputs: 0..<10, taps: 1...1)])
        for interval in TapInterval.intervals(extent: 64, rate: 24) {
            let inputs = interval.inputs(rate: 24)
            #expect(inputs.lowerBound >= 0 && inputs.upperBound <= 64)
        }
        // Rate 36 on 64 positions: 120 of 192 tap positions per axis read the input.
        #expect(abs(TapInterval.workFraction(TapInterval.intervals(extent: 64, rate: 36)) - 120.0 / 192) < 1e-12)
    }

    @Test(arguments: [
        (rate: 6, rows: 13, columns: 17, batch: 2), (rate: 12, rows: 9, columns: 30, batch: 1),
        (rate: 3, rows: 5, columns: 4, batch: 1)
    ])
    func skippingPaddingTapsGivesTheWholeConvolution(_ c: (rate: Int, rows: Int, columns: Int, batch: Int)) throws {
        var generator = SeededGenerator(seed: 5)
        let unit = ConvUnit(
            "conv", "bn", inputChannels: 12, outputChannels: 10, kernelSize: 3, padding: c.rate,
            dilation: c.rate, activation: .relu, generator: &generator)
        let norm = try #require(unit.norm)
        norm.weight.value = (0..<10).map { 1 + 0.05 * Float($0) }
        norm.bias.value = (0..<10).map { 0.1 * Float($0 % 3) - 0.1 }
        norm.runningMean.value = (0..<10).map { 0.02 * Float($0) }
        norm.runningVariance.value = (0..<10).map { 0.5 + 0.1 * Float($0) }
        let shape = [c.batch, 12, c.rows, c.columns]
        let input = (0..<shape.reduce(1, *)).map { _ in generator.symmetricUniform() }
        #expect(PaddingFreeConvolution.plan(for: unit, inputShape: shape) != nil)

        let skipped = try unit(Tensor(plain: shape, values: input), training: false).floatTensor()
        let whole = try unit(Tensor(plain: shape, values: input), training: false, strategy: DirectConvolution())
            .floatTensor()
        #expect(skipped.shape == whole.shape)
        let scale = whole.values.map(abs).max() ?? 1
        let difference = zip(skipped.values, whole.values).map { abs($0 - $1) }.max() ?? 0
        #expect(difference <= 1e-5 * scale, "max |Δ| \(difference) against max |y| \(scale)")
    }
}
