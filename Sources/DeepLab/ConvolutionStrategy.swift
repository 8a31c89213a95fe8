/// One way of computing a `ConvUnit`'s convolution: oneDNN's direct convolution (`DirectConvolution`), one
/// convolution per rectangle of output without the taps that read only padding (`PaddingFreeConvolution`), or
/// Winograd's F(2×2, 3×3) (`WinogradConvolution`). All give the same numbers to float32 rounding.
///
/// A unit asks its strategies in order and runs the first that applies; tests pass the one they compare
/// (`ConvUnit.callAsFunction(_:residual:consumingResidual:training:strategy:)`). A strategy instance keeps the
/// primitives and eval-mode weights of the unit it serves.
protocol ConvolutionStrategy: AnyObject {
    /// Whether this strategy computes `unit` on input dims `inputShape` (NCHW): in eval mode with a residual
    /// input when `residual`, or in training mode when `training`.
    func applies(to unit: ConvUnit, inputShape: [Int], residual: Bool, training: Bool) -> Bool

    /// Eval mode: act(bn(conv(x)) + residual) with batch norm folded into the weights. `consumingResidual`: the
    /// caller no longer needs `residual`, so the output may be written into it.
    func inferenceForward(_ unit: ConvUnit, _ x: Tensor, residual: Tensor?,
                          consumingResidual: Bool) throws -> Tensor

    /// Training mode: the convolution alone (batch norm, residual and activation follow in the unit), with the
    /// unit's own weights, and what `backward` needs.
    func trainingForward(_ unit: ConvUnit, _ x: Tensor) throws -> (output: Tensor, saved: SavedConvolution)

    /// Backward of `trainingForward`: the weight (and bias) gradients are accumulated into the unit's
    /// parameters; dLoss/dInput is returned when `needsInputGradient`. `dy` is dLoss/d(convolution output).
    func backward(_ unit: ConvUnit, _ dy: Tensor, saved: SavedConvolution,
                  needsInputGradient: Bool) throws -> Tensor?

    /// Drops the eval-mode weights kept for the unit (training is about to change its parameters).
    func releaseInferenceWeights()
}

/// What a training forward kept for its strategy's backward.
enum SavedConvolution {
    /// One primitive on `input` (the unit's input of dims `inputShape`, or with `explicitPadding` that input
    /// padded).
    case whole(input: Tensor, inputShape: [Int], primitive: Primitive, explicitPadding: Bool)
    /// One primitive per rectangle of `plan` (see `PaddingFreeConvolution`).
    case rectangles(input: Tensor, plan: TapPlan)
}

/// The destination of a convolution with a fused sum post-op: `residual` itself when the caller gives it up and
/// its layout is `desc`, else a new tensor of `desc` holding a copy of it (or an empty one without a residual).
func fusedSumDestination(_ desc: MemoryDesc, residual: Tensor?, consumingResidual: Bool) throws -> Tensor {
    if let residual, consumingResidual, residual.desc.isEqual(to: desc) { return residual }
    let output = try Tensor(desc: desc)
    if let residual { try residual.reorder(into: output) }
    return output
}

/// Runs a convolution's backward-weights `primitive` on `source` and `diffDestination` (in its layouts) and adds
/// the f32 weight (and bias) gradients into `conv`'s parameters.
func accumulateWeightGradients(_ conv: Conv2d, _ primitive: Primitive, source: Tensor,
                               diffDestination: Tensor) throws {
    let diffWeights = try Tensor(desc: primitive.desc(.diffWeights))
    var arguments: [(Int32, Tensor)] = [(Arg.src, source), (Arg.diffDst, diffDestination),
                                        (Arg.diffWeights, diffWeights)]
    var diffBias: Tensor?
    if conv.bias != nil {
        let b = try Tensor(desc: primitive.desc(.diffWeights, 1))
        arguments.append((Arg.diffBias, b))
        diffBias = b
    }
    try primitive.execute(arguments)
    accumulate(conv.weight, try diffWeights.reordered(
        to: .make(conv.weightDims, MemoryDesc.plainTag(rank: conv.weightDims.count))))
    if let bias = conv.bias, let diffBias { accumulate(bias, diffBias) }
}
