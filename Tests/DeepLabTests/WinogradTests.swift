import CFloatWinograd
import SliceLabSupport
import Testing

@testable import DeepLab

/// Eval mode computes wide 3×3 convolutions (stride 1, padding equal to the dilation) by Winograd's
/// F(2×2, 3×3) or F(4×4, 3×3) instead of oneDNN's direct convolution; the two must agree to float32 rounding, on
/// every instruction set of the transforms this CPU runs.
@Suite struct WinogradTests {
    /// The transforms' instruction sets this CPU runs (the others are named as skipped).
    static let instructionSets: [cfwino_isa] = {
        let supported = cfwino_supported()
        return [cfwino_avx512, cfwino_avx2, cfwino_baseline].filter { isa in
            guard supported & (1 << isa.rawValue) != 0 else {
                print("WinogradTests: \(isa == cfwino_avx512 ? "AVX-512" : "AVX2") transforms skipped: not on this CPU")
                return false
            }
            return true
        }
    }()

    static func unit(
        channels: Int = 256, outputs: Int = 256, stride: Int = 1, padding: Int? = nil,
        dilation: Int = 1, activation: Activation = .relu
    ) throws -> ConvUnit {
        var generator = SeededGenerator(seed: 21)
        let unit = ConvUnit(
            "conv", "bn", inputChannels: channels, outputChannels: outputs, kernelSize: 3,
            stride: stride, padding: padding ?? dilation, dilation: dilation, bias: true,
            activation: activation, generator: &generator)
        let norm = try #require(unit.norm)
        norm.weight.value = ConvolutionStrategyTests.values(outputs, seed: 4).map { 1 + 0.3 * $0 }
        norm.bias.value = ConvolutionStrategyTests.values(outputs, seed: 5).map { 0.2 * $0 }
        norm.runningMean.value = ConvolutionStrategyTests.values(outputs, seed: 6).map { 0.1 * $0 }
        norm.runningVariance.value = ConvolutionStrategyTests.values(outputs, seed: 7).map { 1 + 0.5 * $0 }
        unit.conv.bias?.value = ConvolutionStrategyTests.values(outputs, seed: 8).map { 0.2 * $0 }
        return unit
    }

    /// Whether a unit's default strategies would pick Winograd for it (eval mode, an 8 × 8 input).
    static func picksWinograd(_ unit: ConvUnit, residual: Bool = false) -> Bool {
        WinogradConvolution().applies(
            to: unit, inputShape: [1, unit.conv.inputChannels, 8, 8], residual: residual,
            training: false)
    }

    @Test(
        arguments: [
            (dilation: 1, batch: 2, rows: 9, columns: 11, activation: Activation.relu),
            (dilation: 1, batch: 1, rows: 1, columns: 1, activation: .none),
            (dilation: 2, batch: 2, rows: 10, columns: 7, activation: .relu6),
            (dilation: 3, batch: 1, rows: 13, columns: 5, activation: .relu),
            (dilation: 4, batch: 1, rows: 8, columns: 16, activation: .none),
            (dilation: 2, batch: 1, rows: 19, columns: 23, activation: .relu)
        ], [2, 4])
    func agreesWithTheDirectConvolution(
        _ c: (dilation: Int, batch: Int, rows: Int, columns: Int, activation: Activation), tile: Int
    ) throws {
        let unit = try Self.unit(channels: 256, outputs: 264, dilation: c.dilation, activation: c.activation)
        let shape = [c.batch, 256, c.rows, c.columns]
        let input = try Tensor(plain: shape, values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 9))
        #expect(Self.picksWinograd(unit))
        let direct = try unit(input, training: false, strategy: DirectConvolution()).floatTensor()
        let scale = direct.values.map(abs).max() ?? 0
        #expect(scale > 0.5)  // not all zero
        for isa in Self.instructionSets {
            let fast = try unit(input, training: false, strategy: WinogradConvolution(tile: tile, isa: isa))
                .floatTensor()
            #expect(fast.shape == [c.batch, 264, c.rows, c.columns] && fast.shape == direct.shape)
            let difference = zip(fast.values, direct.values).map { abs($0 - $1) }.max() ?? .infinity
            #expect(difference <= 1e-5 * scale, "ISA \(isa.rawValue): max |Δ| \(difference) against \(scale)")
        }
    }

    /// ASPP-like: most taps of a dilation-6 convolution on a 32 × 32 map read padding, so it runs as padding-free
    /// rectangles, and the all-taps centre (20 × 20 outputs) by Winograd.
    @Test(arguments: [2, 4]) func computesThePaddingFreeCentreRectangle(tile: Int) throws {
        let unit = try Self.unit(dilation: 6)
        let shape = [1, 256, 32, 32]
        let input = try Tensor(plain: shape, values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 11))
        let plan = try #require(PaddingFreeConvolution.plan(for: unit, inputShape: shape))
        let centre = (
            rows: try #require(plan.rows.first { $0.taps == 0...2 }),
            columns: try #require(plan.columns.first { $0.taps == 0...2 })
        )
        #expect(centre.rows.outputs == 6..<26)
        let winograd = WinogradConvolution(tile: tile)
        #expect(
            winograd.computesRectangle(
                of: unit, rows: centre.rows, columns: centre.columns,
                tag: .channelBlocked8, training: false))
        #expect(
            !winograd.computesRectangle(
                of: unit, rows: centre.rows, columns: centre.columns,
                tag: .channelBlocked8, training: true))
        let fast = try unit(input, training: false, strategy: PaddingFreeConvolution(centre: winograd)).floatTensor()
        let direct = try unit(input, training: false, strategy: DirectConvolution()).floatTensor()
        let difference = zip(fast.values, direct.values).map { abs($0 - $1) }.max() ?? .infinity
        let scale = direct.values.map(abs).max() ?? 0
        #expect(scale > 0.5 && difference <= 1e-5 * scale, "max |Δ| \(difference) against \(scale)")  // not all zero
    }

    /// Tile rows computed in chunks (here of 2, 2 and 1 tile rows of 4 × 4 outputs: 19 rows at dilation 1) give what
    /// one chunk gives, the last, smaller chunk included.
    @Test func chunksOfTileRowsAgreeWithOneChunk() throws {
        let unit = try Self.unit(dilation: 1)
        let shape = [1, 256, 19, 13]
        let input = try Tensor(plain: shape, values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 12))
        let whole = try unit(input, training: false, strategy: WinogradConvolution(tile: 4)).floatTensor()
        let tileRow = 36 * 256 * 4 * 4  // planes × channels × bytes × tile columns
        let chunked = try unit(input, training: false, strategy: WinogradConvolution(tile: 4, chunkBytes: 2 * tileRow))
            .floatTensor()
        let difference = zip(chunked.values, whole.values).map { abs($0 - $1) }.max() ?? .infinity
        #expect(difference <= 1e-6 * (whole.values.map(abs).max() ?? 0), "max |Δ| \(difference)")
    }

    @Test func followsParameterChanges() throws {
        let unit = try Self.unit()
        let shape = [1, 256, 6, 6]
        let input = try Tensor(plain: shape, values: ConvolutionStrategyTests.values(shape.reduce(1, *), seed: 10))
        let before = try unit(input, training: false).floatTensor().values
        unit.conv.weight.value = unit.conv.weight.value.map { $0 * 2 }
        unit.conv.weight.markUpdated()
        let after = try unit(input, training: false).floatTensor().values
        #expect(before != after)
        let direct = try unit(input, training: false, strategy: DirectConvolution()).floatTensor().values
        #expect(zip(after, direct).allSatisfy { abs($0 - $1) <= 1e-4 })
    }

    @Test func appliesOnlyToWideSameSizeConvolutions() throws {
        #expect(try Self.picksWinograd(Self.unit(dilation: 2)))
        #expect(try !Self.picksWinograd(Self.unit(dilation: 2), residual: true))
        #expect(try !Self.picksWinograd(Self.unit(stride: 2)))
        #expect(try !Self.picksWinograd(Self.unit(padding: 0)))
        #expect(try !Self.picksWinograd(Self.unit(channels: 128, outputs: 128)))
        #expect(try !Self.picksWinograd(Self.unit(outputs: 260)))
        #expect(
            try !WinogradConvolution().applies(
                to: Self.unit(), inputShape: [1, 256, 8, 8], residual: false,
                training: true))
    }

    @Test func gradientsReadAsZerosUntilWritten() {
        let parameter = Parameter(name: "w", shape: [2, 3], value: [1, 2, 3, 4, 5, 6])
        #expect(parameter.gradient == [0, 0, 0, 0, 0, 0])
        parameter.gradient[4] += 2
        parameter.gradient[4] += 1
        #expect(parameter.gradient == [0, 0, 0, 0, 3, 0])
        let buffer = Parameter(name: "running_mean", shape: [2], value: [1, 2], isTrainable: false)
        #expect(buffer.gradient.isEmpty)
    }
}
