import Foundation
import SliceLabSupport
import Testing

@testable import DeepLab

/// A convolution unit computes its convolution in one of three ways: one primitive padding inside oneDNN, one
/// primitive on the input padded explicitly (copied into a zeroed, larger tensor; keeps large dilations on the
/// direct kernels), or one primitive per rectangle of output with only the taps that read the input
/// (`PaddingFreeConvolution`). Forward, and in training every gradient, must not depend on the way.
@Suite struct ConvolutionStrategyTests {
    enum Strategy: CaseIterable {
        case implicitPadding, explicitPadding, automatic, rectangles

        /// A fresh instance of the strategy.
        func make() -> ConvolutionStrategy {
            switch self {
            case .implicitPadding: DirectConvolution(padding: .implicit)
            case .explicitPadding: DirectConvolution(padding: .explicit)
            case .automatic: DirectConvolution(padding: .automatic)
            case .rectangles: PaddingFreeConvolution()
            }
        }
    }

    static func values(_ count: Int, seed: UInt64) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in generator.symmetricUniform() }
    }

    /// The output of a forward (and in training the input's and every parameter's gradient after a backward).
    static func run(
        _ unit: ConvUnit, _ strategy: Strategy, input: [Float], shape: [Int],
        training: Bool
    ) throws -> [[Float]] {
        let y = try unit(Tensor(plain: shape, values: input), training: training, strategy: strategy.make())
            .floatTensor()
        guard training else { return [y.values] }
        for p in unit.parameters where p.isTrainable { p.gradient = [Float](repeating: 0, count: p.value.count) }
        let dy = values(y.values.count, seed: 9)
        let dx = try #require(try unit.backward(Tensor(plain: y.shape, values: dy)).input).floatTensor()
        #expect(dx.shape == shape)
        return [y.values, dx.values] + unit.parameters.filter(\.isTrainable).map(\.gradient)
    }

    @Test(arguments: [
        (stride: 1, dilation: 4, rows: 11, columns: 13, bias: false, training: false),
        (stride: 1, dilation: 4, rows: 11, columns: 13, bias: true, training: true),
        (stride: 1, dilation: 6, rows: 9, columns: 16, bias: false, training: true),
        (stride: 2, dilation: 1, rows: 9, columns: 8, bias: false, training: true),
        (stride: 2, dilation: 2, rows: 10, columns: 7, bias: false, training: false)
    ])
    func everyStrategyGivesTheSameOutputAndGradients(
        _ c: (stride: Int, dilation: Int, rows: Int, columns: Int, bias: Bool, training: Bool)
    ) throws {
        var generator = SeededGenerator(seed: 3)
        let unit = ConvUnit(
            "conv", "bn", inputChannels: 16, outputChannels: 8, kernelSize: 3, stride: c.stride,
            padding: c.dilation, dilation: c.dilation, bias: c.bias, activation: .relu,
            generator: &generator)
        let norm = try #require(unit.norm)
        norm.weight.value = Self.values(8, seed: 4).map { 1 + 0.3 * $0 }
        norm.bias.value = Self.values(8, seed: 5).map { 0.2 * $0 }
        norm.runningMean.value = Self.values(8, seed: 6).map { 0.1 * $0 }
        norm.runningVariance.value = Self.values(8, seed: 7).map { 1 + 0.5 * $0 }
        unit.conv.bias?.value = Self.values(8, seed: 8).map { 0.2 * $0 }
        let shape = [2, 16, c.rows, c.columns]
        let input = Self.values(shape.reduce(1, *), seed: 8)

        let reference = try Self.run(unit, .implicitPadding, input: input, shape: shape, training: c.training)
        for strategy in Strategy.allCases where strategy != .implicitPadding {
            if strategy == .rectangles, PaddingFreeConvolution.plan(for: unit, inputShape: shape) == nil {
                continue  // strided: no rectangles
            }
            let result = try Self.run(unit, strategy, input: input, shape: shape, training: c.training)
            #expect(result.count == reference.count)
            for (i, (r, e)) in zip(result, reference).enumerated() {
                let difference = zip(r, e).map { abs($0 - $1) }.max() ?? 0
                let scale = e.map(abs).max() ?? 0
                // (A bias before batch norm has a gradient of zero up to rounding: hence the floor.)
                #expect(
                    difference <= 1e-4 * max(scale, 0.1),
                    "\(strategy), \(i == 0 ? "output" : "gradient \(i)"): max |Δ| \(difference) against \(scale)")
            }
        }
    }

    /// A dilated depthwise convolution on an explicitly padded copy (channels last, where only the padding is
    /// zeroed) gives oneDNN's implicitly padded output, also when the copy's buffer is reused from a tensor that
    /// held NaN (a padding left unzeroed would show).
    @Test func explicitPaddingZeroesTheWholePaddingOfAReusedBuffer() throws {
        var generator = SeededGenerator(seed: 11)
        let unit = ConvUnit(
            "conv", nil, inputChannels: 64, outputChannels: 64, kernelSize: 3, padding: 4, dilation: 4, groups: 64,
            bias: true, activation: .relu6, generator: &generator)
        let shape = [2, 64, 20, 24]
        let input = Self.values(shape.reduce(1, *), seed: 12).map { 3 * $0 }
        let reference = try Self.run(unit, .implicitPadding, input: input, shape: shape, training: false)[0]
        let bytes = unit.conv.paddedDims(shape).reduce(MemoryLayout<Float>.size, *)
        let stale = try #require(TensorMemory.shared.allocate(bytes))
        stale.initializeMemory(as: Float.self, repeating: .nan, count: bytes / MemoryLayout<Float>.size)
        TensorMemory.shared.release(stale, bytes: bytes)
        let result = try Self.run(unit, .explicitPadding, input: input, shape: shape, training: false)[0]
        let scale = reference.map(abs).max() ?? 0
        #expect(result.allSatisfy { !$0.isNaN })
        #expect(zip(result, reference).allSatisfy { abs($0 - $1) <= 1e-5 * scale })
    }
}
