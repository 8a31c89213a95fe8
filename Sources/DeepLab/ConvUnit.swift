import SliceLabSupport

/// Convolution, optional batch norm, optional residual addition and activation — the unit every DeepLabV3
/// layer is built from (torchvision's `Conv2dNormActivation`, or a block's `convN`/`bnN` pair).
///
/// Eval mode computes the convolution with batch norm folded into its weights and the residual sum and
/// activation fused. Training mode runs convolution, batch norm with batch statistics, sum and activation as
/// separate primitives and keeps what `backward` needs. The convolution itself is computed by the first of
/// `strategies` that applies (`ConvolutionStrategy`): int8 for a quantised model in eval mode, bf16 for a unit
/// set to bf16 (eval and training), then, where the effective ISA's `ConvolutionStrategyTable` entry allows
/// them, padding-free rectangles for dilated 3×3 convolutions whose padding taps are a tenth of the work or more
/// and Winograd for wide 3×3 ones in eval mode, else oneDNN's direct convolution.
final class ConvUnit {
    let conv: Conv2d
    let norm: BatchNorm2d?
    let activation: Activation
    /// The ways to compute the convolution, in order of preference; the last applies to every unit.
    var strategies: [ConvolutionStrategy]
    /// The unit's int8 parameters when its model is quantised (eval mode then runs `Int8Convolution`).
    var quantization: UnitQuantization?
    /// The next unit's int8 parameters when this unit's output feeds only that unit (inside a block): the
    /// output is then written quantised for it (`Int8Convolution`).
    var quantizedOutput: UnitQuantization?
    /// The quantisation of the residual this unit adds when that residual arrives as u8/s8 (a block's input
    /// quantised at the block's entry, `QuantizableBlock.entryQuantization`), nil when it is always f32.
    var quantizedResidual: UnitQuantization?
    /// How the unit's convolution runs in bf16 (`Bf16Convolution`), nil for f32.
    var bf16: Bf16Execution?
    /// Eval mode: the output feeds only the next unit of a chain, which runs in bf16, so a bf16 convolution writes
    /// it in bf16 (`DeepLabV3.useBf16(_:)`).
    var bf16Output = false

    /// Whether the unit's convolution runs in bf16 (a `Bf16Convolution` of its strategies takes it).
    var runsInBf16: Bool { strategies.contains { ($0 as? Bf16Convolution)?.runs(self) == true } }
    /// Called with every eval-mode input before the convolution (calibration collects statistics through it).
    var inputObserver: ((Tensor) throws -> Void)?
    /// How eval mode computes this depthwise unit and the pointwise one after it in one pass, when they are a
    /// separable convolution (`forwardChain`), nil for one by one.
    var separableFusion: FusedInvertedResidual?
    /// The multiply-adds of every eval-mode forward so far, counted as the direct algorithm does them (padding
    /// taps included, whatever `strategies` computed): N · H_out · W_out · O · I / groups · k².
    private(set) var multiplyAdds = 0
    /// The eval-mode forwards' costs while `LayerProfiling` is on.
    private(set) var profile: LayerProfile?

    /// The convolution's `state_dict` prefix (`backbone.layer1.0.conv1`), which names the unit.
    var name: String { String(conv.weight.name.dropLast(".weight".count)) }

    /// - Parameter strategyTable: which strategies the unit may use; the effective ISA's entry by default.
    init(
        conv: Conv2d, norm: BatchNorm2d?, activation: Activation,
        strategyTable: ConvolutionStrategyTable = .effective
    ) {
        self.conv = conv
        self.norm = norm
        self.activation = activation
        strategies = strategyTable.strategies()
    }

    /// `conv` named `convName`, batch norm named `normName`, as torchvision's blocks name them.
    convenience init(
        _ convName: String, _ normName: String?, inputChannels: Int, outputChannels: Int,
        kernelSize: Int, stride: Int = 1, padding: Int = 0, dilation: Int = 1, groups: Int = 1,
        bias: Bool = false, activation: Activation, generator: inout SeededGenerator
    ) {
        let conv = Conv2d(
            name: convName, inputChannels: inputChannels, outputChannels: outputChannels,
            kernelSize: kernelSize, stride: stride, padding: padding, dilation: dilation,
            groups: groups, bias: bias, generator: &generator)
        self.init(
            conv: conv, norm: normName.map { BatchNorm2d(name: $0, channels: outputChannels) },
            activation: activation)
    }

    var parameters: [Parameter] { conv.parameters + (norm?.parameters ?? []) }

    /// Batch norm's and the activation's primitives in training.
    private let primitives = PrimitiveCache()
    /// What the last training forward kept for backward, until backward has used it.
    private(set) var saved: Saved?

    struct Saved {
        /// The strategy that computed the convolution, and what it kept for its backward.
        let strategy: ConvolutionStrategy
        let convolution: SavedConvolution
        let convOutput: Tensor
        let normPrimitive: Primitive?
        let mean: Tensor?
        let variance: Tensor?
        /// A synchronised batch norm's statistics (then `convOutput` is plain NCHW).
        var synchronized: SynchronizedStatistics? = nil
        /// A `*_use_dst_for_bwd` activation, whose backward reads `output`.
        let activationPrimitive: Primitive?
        let output: Tensor
        let hasResidual: Bool
    }

    /// Sets `multiplyAdds` back to zero, and drops the profile.
    func resetMultiplyAdds() {
        multiplyAdds = 0
        profile = nil
    }

    var parameterVersion: Int { parameters.reduce(0) { $0 &+ $1.version } }

    /// Applies the unit: act(bn(conv(x)) + residual).
    ///
    /// - Parameters:
    ///   - x: [N, inputChannels, H, W] in any layout.
    ///   - residual: a tensor of the output's shape added before the activation, or nil.
    ///   - consumingResidual: the caller no longer needs `residual`, so eval mode may write the output into it
    ///     (saving a copy) when its layout is the convolution's.
    ///   - training: batch statistics and saved state for backward, instead of folded eval arithmetic.
    ///   - strategy: how to compute the convolution; nil takes the first of `strategies` that applies (tests
    ///     pass the strategies they compare).
    func callAsFunction(
        _ x: Tensor, residual: Tensor? = nil, consumingResidual: Bool = false, training: Bool,
        strategy: ConvolutionStrategy? = nil
    ) throws -> Tensor {
        let strategy =
            strategy ?? strategies.first {
                $0.applies(to: self, inputShape: x.shape, residual: residual != nil, training: training)
            } ?? DirectConvolution()
        if training { return try trainingForward(x, residual: residual, strategy: strategy) }
        saved = nil
        try inputObserver?(x)
        let work = countForward(inputShape: x.shape)
        guard LayerProfiling.enabled else {
            return try strategy.inferenceForward(self, x, residual: residual, consumingResidual: consumingResidual)
        }
        let (y, seconds, collected) = try LayerProfiling.measure {
            try strategy.inferenceForward(self, x, residual: residual, consumingResidual: consumingResidual)
        }
        record(
            name: name, strategy: strategy.label, seconds: seconds, collected: collected, multiplyAdds: work,
            inside: multiplyAddsInside(inputShape: x.shape),
            bytes: max(collected.bytes, x.desc.byteCount + y.desc.byteCount))
        return y
    }

    /// Adds one eval-mode forward on input dims `inputShape` to `multiplyAdds` and returns its multiply-adds.
    func countForward(inputShape: [Int]) -> Int {
        let out = conv.outputDims(inputShape)
        let k = conv.window.kernel
        let work = out.reduce(1, *) * conv.inputChannels / conv.groups * k * k
        multiplyAdds += work
        return work
    }

    /// The multiply-adds of a forward on `inputShape` on taps that read the input, not padding: the work a kernel
    /// that skips padding does.
    func multiplyAddsInside(inputShape s: [Int]) -> Int {
        let out = conv.outputDims(s)
        let w = conv.window
        return out[0] * out[1] * conv.inputChannels / conv.groups
            * LayerProfile.tapsInside(s[2], out[2], w.kernel, w.stride, w.padding, w.dilation)
            * LayerProfile.tapsInside(s[3], out[3], w.kernel, w.stride, w.padding, w.dilation)
    }

    /// The share of a forward's taps on `inputShape` that read the input rather than padding (1 without padding).
    func insideShare(inputShape s: [Int]) -> Double {
        let out = conv.outputDims(s)
        let all = out.reduce(1, *) * conv.inputChannels / conv.groups * conv.window.kernel * conv.window.kernel
        return all > 0 ? Double(multiplyAddsInside(inputShape: s)) / Double(all) : 1
    }

    /// Adds one profiled forward to `profile`, created named `name` with `strategy` on the first (a fused block
    /// records its whole work on its first unit, under the block's name).
    func record(
        name: String, strategy: String, seconds: Double, collected: LayerProfiling.Collected, multiplyAdds: Int,
        inside: Int, bytes: Int
    ) {
        var entry =
            profile
            ?? LayerProfile(name: name, strategy: strategy, implementations: collected.implementations.sorted())
        // Kernels of our own execute no oneDNN primitive: their input and output at the least.
        entry.record(
            seconds: seconds, creation: collected.creationSeconds, multiplyAdds: multiplyAdds, inside: inside,
            bytes: bytes)
        profile = entry
    }

    // MARK: Eval

    /// The weights and bias with batch norm folded in, in PyTorch's plain [O, I, k, k] order.
    func foldedPlainWeights() -> (weights: [Float], bias: [Float]) {
        guard let norm else {
            return (conv.weight.value, conv.bias?.value ?? [Float](repeating: 0, count: conv.outputChannels))
        }
        return norm.fold(weights: conv.weight.value, bias: conv.bias?.value)
    }

    // MARK: Training

    private func trainingForward(_ x: Tensor, residual: Tensor?, strategy: ConvolutionStrategy) throws -> Tensor {
        // Eval-mode weights (from a validation pass) are stale once training updates the parameters.
        for strategy in strategies { strategy.releaseInferenceWeights() }
        let (rawOutput, convolution) = try strategy.trainingForward(self, x)
        var convOutput = rawOutput
        var current = convOutput
        var normPrimitive: Primitive?
        var mean: Tensor?
        var variance: Tensor?
        var synchronized: SynchronizedStatistics?
        if let norm, let sum = SynchronizedBatchNorm.sum {
            convOutput = try convOutput.reordered(to: .make(convOutput.shape, MemoryDesc.plainTag(rank: 4)))
            (current, synchronized) = try norm.synchronizedForward(convOutput, sum: sum)
        } else if let norm {
            let p = try primitives.primitive(PrimitiveCache.Key("bn", convOutput.desc)) {
                try Primitive(
                    "batch normalization",
                    op: BatchNormalizationOp.trainingForward(convOutput.desc, epsilon: norm.epsilon))
            }
            let out = try Tensor(desc: convOutput.desc)
            let m = try Tensor(desc: p.desc(.destination, 1))
            let v = try Tensor(desc: p.desc(.destination, 2))
            let scale = try Tensor(plain: [norm.channels], values: norm.weight.value)
            let shift = try Tensor(plain: [norm.channels], values: norm.bias.value)
            try p.execute([
                (Arg.src, convOutput), (Arg.dst, out), (Arg.mean, m), (Arg.variance, v),
                (Arg.scale, scale), (Arg.shift, shift)
            ])
            let s = convOutput.shape
            norm.updateRunningStatistics(
                mean: m.withStorage { Array($0.prefix(norm.channels)) },
                variance: v.withStorage { Array($0.prefix(norm.channels)) },
                count: s[0] * s[2] * s[3])
            normPrimitive = p
            mean = m
            variance = v
            current = out
        }
        if let residual { current = try Operations.sum([current, residual]) }
        // The activation runs in place (on the normalised output or the residual sum; on the convolution's output
        // only without batch norm, whose backward would need it), and its backward reads the output, as PyTorch's
        // in-place ReLU does: one activation fewer kept per unit.
        var activationPrimitive: Primitive?
        switch activation {
        case .none: break
        case .relu:
            let (y, p) = try Operations.eltwise(
                current, .reluUsingDestination, training: true,
                inPlace: true)
            current = y
            activationPrimitive = p
        case .relu6:
            let (y, p) = try Operations.eltwise(
                current, .clipUsingDestination, alpha: 0, beta: 6,
                training: true, inPlace: true)
            current = y
            activationPrimitive = p
        }
        saved = Saved(
            strategy: strategy, convolution: convolution, convOutput: convOutput,
            normPrimitive: normPrimitive, mean: mean, variance: variance,
            synchronized: synchronized, activationPrimitive: activationPrimitive, output: current,
            hasResidual: residual != nil)
        return current
    }

    // MARK: Backward

    /// Backpropagates dLoss/dOutput through activation, residual sum, batch norm and convolution, accumulating
    /// the weight, bias, γ and β gradients into their parameters.
    ///
    /// - Parameters:
    ///   - dy: dLoss/dOutput, in any layout.
    ///   - needsInputGradient: false for the network's first layer, whose input needs no gradient.
    /// - Returns: dLoss/dInput (nil when not needed) and dLoss/dResidual (nil without a residual).
    /// - Throws: `DeepLabError.invalidBackward` without a preceding training forward. Rests on oneDNN's
    ///   eltwise, batch-normalisation and convolution backward primitives.
    func backward(_ dy: Tensor, needsInputGradient: Bool = true) throws -> (input: Tensor?, residual: Tensor?) {
        guard let saved else {
            throw DeepLabError.invalidBackward("no training-mode forward to backpropagate through")
        }
        self.saved = nil  // each forward is backpropagated once; its activations go as soon as they are used
        var gradient = try dy.reordered(to: saved.output.desc)
        if let forward = saved.activationPrimitive {
            gradient = try Operations.eltwiseBackward(
                gradient, destination: saved.output, forward: forward,
                primitives: primitives)
        }
        let residualGradient: Tensor? = saved.hasResidual ? gradient : nil
        if let norm, let statistics = saved.synchronized {
            gradient = try norm.synchronizedBackward(
                try gradient.reordered(to: saved.convOutput.desc),
                x: saved.convOutput, statistics)
        } else if let norm, let normPrimitive = saved.normPrimitive, let mean = saved.mean,
            let variance = saved.variance
        {
            let p = try primitives.primitive(PrimitiveCache.Key("bn-backward", saved.convOutput.desc)) {
                try Primitive(
                    "batch normalization backward",
                    op: BatchNormalizationOp.backward(saved.convOutput.desc, epsilon: norm.epsilon),
                    hint: normPrimitive)
            }
            let diffSource = try Tensor(desc: saved.convOutput.desc)
            let scale = try Tensor(plain: [norm.channels], values: norm.weight.value)
            let shift = try Tensor(plain: [norm.channels], values: norm.bias.value)
            let diffScale = try Tensor(plain: [norm.channels], values: [Float](repeating: 0, count: norm.channels))
            let diffShift = try Tensor(plain: [norm.channels], values: [Float](repeating: 0, count: norm.channels))
            let g = try gradient.reordered(to: saved.convOutput.desc)
            try p.execute([
                (Arg.src, saved.convOutput), (Arg.mean, mean), (Arg.variance, variance), (Arg.diffDst, g),
                (Arg.scale, scale), (Arg.shift, shift), (Arg.diffSrc, diffSource),
                (Arg.diffScale, diffScale), (Arg.diffShift, diffShift)
            ])
            accumulate(norm.weight, diffScale)
            accumulate(norm.bias, diffShift)
            gradient = diffSource
        }
        let dx = try saved.strategy.backward(
            self, gradient, saved: saved.convolution,
            needsInputGradient: needsInputGradient)
        return (dx, residualGradient)
    }
}

/// Adds `values` (at least `parameter.value.count` of them) to the parameter's gradient.
func accumulate(_ parameter: Parameter, _ tensor: Tensor) {
    let count = parameter.gradient.count
    tensor.withStorage { values in
        precondition(values.count >= count, "gradient of \(parameter.name): \(values.count) values for \(count)")
        parameter.gradient.withUnsafeMutableBufferPointer { g in
            for i in 0..<count { g[i] += values[i] }
        }
    }
}
