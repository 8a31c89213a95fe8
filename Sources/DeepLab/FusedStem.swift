import CFusedBlocks
import SliceLabSupport

/// MobileNetV2's input upscale, stem and first block in one pass in eval mode (float32), by `CFusedBlocks`: the
/// first block's input rows (the stem's output) are made as its depthwise rows need them, each from the three
/// upscaled rows it reads, made in turn from their two source rows. Neither the upscaled image nor the stem's output
/// (32 channels at half the upscaled extent: 5.9 MB for the bundled model's 233 × 197 slice at scale 2) goes to
/// memory; the pass reads the source image and writes the first block's output. The same sums as
/// `resizeHalfPixel`, the stem and the block's units, up to their order (float32 rounding); `FusedStemTests` hold
/// it to them.
///
/// Used wherever the first block fuses (`FusedInvertedResidual`), on the same kernels.
final class FusedStem {
    /// The stem's folded taps and bias in the kernels' layout, with the parameter version and kernels they were made for.
    private var weights: FusedKernels.Weights?

    /// The environment variable that overrides the default for measuring: `0` runs the upscale, the stem and the
    /// first block apart, `1` fuses them wherever they fit.
    public static let variable = "SLICELAB_FUSED_STEM"

    /// Whether this process fuses the stem where the first block fuses: by default, or as `variable` says.
    static let enabledInThisProcess = FusedKernels.measuringSwitch(variable, else: true)

    /// Whether this computes `stem` then `block` in eval mode: a float32 stem (no int8, no bf16, no calibration
    /// observing it) of 3 × 3 taps at stride 2 with padding 1, at most `maximumInputChannels` inputs, whose output
    /// `block` alone reads, and a block without expansion or identity that `fusion` takes on the stem's output dims.
    static func fits(_ stem: ConvUnit, _ block: InvertedResidual, fusion: FusedInvertedResidual, stemOutput: [Int])
        -> Bool
    {
        let w = stem.conv.window
        return stem.quantization == nil && stem.quantizedOutput == nil && stem.bf16 == nil
            && stem.inputObserver == nil && stem.conv.groups == 1 && w.kernel == 3 && w.stride == 2
            && w.padding == 1 && w.dilation == 1 && stem.conv.inputChannels <= maximumInputChannels
            && block.units.count == 2 && !block.usesResidual && fusion.takes(block, inputShape: stemOutput)
    }

    /// The stem's taps are broadcast one input value at a time: meant for images of a few channels (a slice and its
    /// context), not for feature maps.
    static let maximumInputChannels = 16

    /// `block(stem(x upscaled to `size`))` into a channels-last tensor, `x` [N, C, h, w] in any layout, on the kernels
    /// of `fusion` (the block's fusion, whose weights it takes); counted and profiled as the stem and the block's units
    /// would be, the whole cost on the stem under both names (strategy `fused-stem`).
    func callAsFunction(
        _ stem: ConvUnit, _ block: InvertedResidual, fusion: FusedInvertedResidual, _ x: Tensor,
        upscaledTo size: (Int, Int)
    ) throws -> Tensor {
        let s = x.shape
        let upscaled = [s[0], s[1], size.0, size.1]
        let name = "\(stem.name) + \(block.name)"
        return try FusedKernels.counted(
            [stem] + block.units, inputShape: upscaled, x, name: name, strategy: "fused-stem"
        ) {
            let stemWeights = prepare(stem, isa: fusion.isa)
            var geometry = cfused_stem()
            geometry.source_height = Int32(s[2])
            geometry.source_width = Int32(s[3])
            geometry.source_channels = Int32(s[1])
            geometry.upscaled_height = Int32(upscaled[2])
            geometry.upscaled_width = Int32(upscaled[3])
            geometry.weights = stemWeights.pointer(0)
            geometry.bias = stemWeights.pointer(1)
            geometry.activation = FusedKernels.activation(stem.activation)
            // The resize's taps: each row's and column's two sources (first rows, then columns) and second weight.
            let (rows, columns) = (
                ResizeTaps.halfPixel(input: s[2], output: upscaled[2]),
                ResizeTaps.halfPixel(input: s[3], output: upscaled[3])
            )
            let sources = rows.map(\.first) + rows.map(\.second) + columns.map(\.first) + columns.map(\.second)
            let indexes = UnsafeMutableBufferPointer<Int32>.allocate(capacity: sources.count)
            let blends = UnsafeMutableBufferPointer<Float>.allocate(capacity: rows.count + columns.count)
            defer {
                indexes.deallocate()
                blends.deallocate()
            }
            _ = indexes.initialize(from: sources.map { Int32($0) })
            _ = blends.initialize(from: rows.map(\.weight) + columns.map(\.weight))
            let (index, blend) = (UnsafePointer(indexes.baseAddress!), UnsafePointer(blends.baseAddress!))
            geometry.row_first = index
            geometry.row_second = index + rows.count
            geometry.column_first = index + 2 * rows.count
            geometry.column_second = index + 2 * rows.count + columns.count
            geometry.row_weights = blend
            geometry.column_weights = blend + rows.count
            return try withExtendedLifetime(stemWeights) {
                try FusedKernels.run(
                    FusedInvertedResidual.description(block, inputShape: stem.conv.outputDims(upscaled)), x,
                    weights: fusion.weights(for: block), isa: fusion.isa, name: "fused stem \(name)", stem: geometry)
            }
        }
    }

    /// The stem's folded weights [O, C, 3, 3] as [9 · C][padded O] (row (3ky + kx) · C + c) and its bias padded, for
    /// `isa`'s kernels, made once per parameter version.
    private func prepare(_ stem: ConvUnit, isa: cfused_isa) -> FusedKernels.Weights {
        let version = stem.parameterVersion
        if let weights, weights.version == version, weights.isa == isa { return weights }
        let (w, bias) = stem.foldedPlainWeights()
        let (outputs, inputs) = (stem.conv.outputChannels, stem.conv.inputChannels)
        let padded = Int(cfused_padded(Int32(outputs), isa))
        var taps = [Float](repeating: 0, count: 9 * inputs * padded)
        for o in 0..<outputs {
            for c in 0..<inputs { for t in 0..<9 { taps[(t * inputs + c) * padded + o] = w[(o * inputs + c) * 9 + t] } }
        }
        let weights = FusedKernels.Weights(
            version: version, isa: isa, arrays: [taps, bias + [Float](repeating: 0, count: padded - outputs)])
        self.weights = weights
        return weights
    }
}
