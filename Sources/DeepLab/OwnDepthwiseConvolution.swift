import CFusedBlocks

/// Eval-mode depthwise 3 × 3 convolutions (stride 1 or 2, padding equal to the dilation, dilation up to
/// `CFUSED_MAX_DILATION`) by `CFusedBlocks`' depthwise kernel, batch norm folded and the activation applied: one
/// output row at a time from three input rows held in a small ring with their padding columns, where oneDNN 2.6's
/// `jit_dw` makes an explicitly padded copy of a dilated convolution's whole input first. Channels last. The same
/// sums as oneDNN's up to their order (float32 rounding; `OwnDepthwiseTests`).
final class OwnDepthwiseConvolution: ConvolutionStrategy {
    private var weights: FusedKernels.Weights?
    /// The kernels it runs on.
    let isa: cfused_isa

    /// The strategy on `isa`'s kernels (by default the effective ISA's), or nil where there are none.
    init?(isa: cfused_isa? = FusedInvertedResidual.effectiveISA) {
        guard let isa else { return nil }
        self.isa = isa
    }

    /// The environment variable that overrides the table for measuring (`Benchmarks/bench_fused_blocks.py`): `0`
    /// leaves depthwise convolutions to the other strategies, `1` takes them on any ISA with kernels.
    public static let variable = "SLICELAB_OWN_DEPTHWISE"

    /// Whether units under `table` take this strategy: its `ownDepthwise`, or `variable`.
    static func enabled(by table: ConvolutionStrategyTable) -> Bool {
        FusedKernels.measuringSwitch(variable, else: table.ownDepthwise)
    }

    /// Eval mode, no residual, a unit that `fits`, dilated, where at most `maximumInsideShare` of its taps read the
    /// input rather than padding.
    func applies(to unit: ConvUnit, inputShape: [Int], residual: Bool, training: Bool) -> Bool {
        !training && !residual && Self.fits(unit) && unit.conv.window.dilation > 1
            && unit.insideShare(inputShape: inputShape) <= Self.maximumInsideShare
    }

    /// Where oneDNN 2.6's `jit_dw` makes a padded copy much larger than the input. Measured on the AMX Xeon against it
    /// in the same processes (DeepLabV3+'s separable ASPP, 1280 channels on 30 × 25): rate 12 (half the taps inside)
    /// 0.31 × its time, rate 18 (0.31 inside) 0.63 × that of the padding-free rectangles it ran as; rate 6 (0.73
    /// inside) 1.27 ×, MobileNetV2's dilation-2 depthwise units there (0.9) 1.13–1.50 ×; on the bundled model's
    /// 117 × 99 maps at dilation 4 (0.98) 0.74–0.93 ×, left to oneDNN all the same.
    static let maximumInsideShare = 0.6

    /// A float32 depthwise 3 × 3 convolution the kernel computes.
    static func fits(_ unit: ConvUnit) -> Bool {
        FusedKernels.fitsDepthwise(unit.conv) && unit.quantization == nil && unit.bf16 == nil
    }

    func inferenceForward(
        _ unit: ConvUnit, _ x: Tensor, residual: Tensor?, consumingResidual: Bool
    ) throws -> Tensor {
        precondition(residual == nil, "the own depthwise convolution takes no residual input")
        return try FusedKernels.run(
            FusedKernels.description(unit, inputShape: x.shape), x, weights: prepare(unit), isa: isa,
            name: unit.name)
    }

    /// The folded taps in the kernel's layout, made once per parameter version.
    private func prepare(_ unit: ConvUnit) -> FusedKernels.Weights {
        let version = unit.parameterVersion
        if let weights, weights.version == version, weights.isa == isa { return weights }
        let (taps, bias) = FusedKernels.depthwiseTaps(unit, isa: isa)
        let weights = FusedKernels.Weights(version: version, isa: isa, arrays: [[], [], taps, bias, [], []])
        self.weights = weights
        return weights
    }

    func releaseInferenceWeights() { weights = nil }

    /// Eval mode only: `applies` excludes training, so a unit never asks for it.
    func trainingForward(_ unit: ConvUnit, _ x: Tensor) throws -> (output: Tensor, saved: SavedConvolution) {
        throw DeepLabError.invalidConfiguration("the own depthwise convolution runs in eval mode only")
    }

    /// Eval mode only (see `trainingForward`).
    func backward(
        _ unit: ConvUnit, _ dy: Tensor, saved: SavedConvolution, needsInputGradient: Bool
    ) throws -> Tensor? {
        throw DeepLabError.invalidBackward("the own depthwise convolution runs in eval mode only")
    }
}
