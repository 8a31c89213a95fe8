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
    private var weights: FusedKernels.Weights?
    /// The kernels it runs on.
    let isa: cfused_isa

    /// Fusion on `isa`'s kernels (by default the effective ISA's), or nil where there are none.
    init?(isa: cfused_isa? = FusedInvertedResidual.effectiveISA) {
        guard let isa else { return nil }
        self.isa = isa
    }

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

    /// `block(stem(x upscaled to `size`))` into a channels-last tensor, `x` [N, C, h, w] in any layout; counted and
    /// profiled as the stem and the block's units would be, the whole cost on the stem under both names (strategy
    /// `fused-stem`).
    func callAsFunction(_ stem: ConvUnit, _ block: InvertedResidual, _ x: Tensor, upscaledTo size: (Int, Int))
        throws -> Tensor
    {
        let upscaled = [x.shape[0], x.shape[1], size.0, size.1]
        var shapes = [upscaled, stem.conv.outputDims(upscaled)]
        for unit in block.units { shapes.append(unit.conv.outputDims(shapes[shapes.count - 1])) }
        let units = [stem] + block.units
        let work = zip(units, shapes).reduce(0) { $0 + $1.0.countForward(inputShape: $1.1) }
        guard LayerProfiling.enabled else { return try forward(stem, block, x, upscaled: upscaled) }
        let inside = zip(units, shapes).reduce(0) { $0 + $1.0.multiplyAddsInside(inputShape: $1.1) }
        let (y, seconds, collected) = try LayerProfiling.measure { try forward(stem, block, x, upscaled: upscaled) }
        stem.record(
            name: "\(stem.name) + \(block.name)", strategy: "fused-stem", seconds: seconds, collected: collected,
            multiplyAdds: work, inside: inside, bytes: max(collected.bytes, x.desc.byteCount + y.desc.byteCount))
        return y
    }

    private func forward(_ stem: ConvUnit, _ block: InvertedResidual, _ x: Tensor, upscaled: [Int]) throws -> Tensor {
        let stemOutput = stem.conv.outputDims(upscaled)
        var description = FusedKernels.description(block.units[0], inputShape: stemOutput)
        description.out_channels = Int32(block.units[1].conv.outputChannels)
        let s = x.shape
        let rows = ResizeTaps.halfPixel(input: s[2], output: upscaled[2])
        let columns = ResizeTaps.halfPixel(input: s[3], output: upscaled[3])
        let weights = prepare(stem, block)
        var geometry = cfused_stem()
        geometry.source_height = Int32(s[2])
        geometry.source_width = Int32(s[3])
        geometry.source_channels = Int32(s[1])
        geometry.upscaled_height = Int32(upscaled[2])
        geometry.upscaled_width = Int32(upscaled[3])
        geometry.weights = weights.pointer(6)
        geometry.bias = weights.pointer(7)
        geometry.activation = FusedKernels.activation(stem.activation)
        // Each array's storage is pinned while the kernels read it.
        let tables = [
            rows.map { Int32($0.first) }, rows.map { Int32($0.second) }, columns.map { Int32($0.first) },
            columns.map { Int32($0.second) }
        ]
        let (rowWeights, columnWeights) = (rows.map(\.weight), columns.map(\.weight))
        return try tables[0].withUnsafeBufferPointer { rowFirst in
            try tables[1].withUnsafeBufferPointer { rowSecond in
                try tables[2].withUnsafeBufferPointer { columnFirst in
                    try tables[3].withUnsafeBufferPointer { columnSecond in
                        try rowWeights.withUnsafeBufferPointer { rowWeights in
                            try columnWeights.withUnsafeBufferPointer { columnWeights in
                                geometry.row_first = rowFirst.baseAddress
                                geometry.row_second = rowSecond.baseAddress
                                geometry.column_first = columnFirst.baseAddress
                                geometry.column_second = columnSecond.baseAddress
                                geometry.row_weights = rowWeights.baseAddress
                                geometry.column_weights = columnWeights.baseAddress
                                return try FusedKernels.run(
                                    description, x, weights: weights, isa: isa,
                                    name: "fused stem \(stem.name) + \(block.name)", stem: geometry)
                            }
                        }
                    }
                }
            }
        }
    }

    /// The folded weights in the kernels' layout (the block's as `FusedInvertedResidual` has them, then the stem's
    /// taps and bias), made once per parameter version.
    private func prepare(_ stem: ConvUnit, _ block: InvertedResidual) -> FusedKernels.Weights {
        let version = ([stem] + block.units).reduce(0) { $0 &+ $1.parameterVersion }
        if let weights, weights.version == version, weights.isa == isa { return weights }
        let (taps, tapsBias) = FusedKernels.depthwiseTaps(block.units[0], isa: isa)
        let projection = FusedKernels.pointwiseWeights(block.units[1], isa: isa)
        // [O, C, 3, 3] as [9 · C][padded O], row (3ky + kx) · C + c.
        let (w, bias) = stem.foldedPlainWeights()
        let (outputs, inputs) = (stem.conv.outputChannels, stem.conv.inputChannels)
        let padded = Int(cfused_padded(Int32(outputs), isa))
        var stemTaps = [Float](repeating: 0, count: 9 * inputs * padded)
        for o in 0..<outputs {
            for c in 0..<inputs {
                for t in 0..<9 { stemTaps[(t * inputs + c) * padded + o] = w[(o * inputs + c) * 9 + t] }
            }
        }
        let weights = FusedKernels.Weights(
            version: version, isa: isa,
            arrays: [
                [], [], taps, tapsBias, projection.weights, projection.bias, stemTaps,
                bias + [Float](repeating: 0, count: padded - outputs)
            ])
        self.weights = weights
        return weights
    }
}
