/// Convolution, optional batch norm, optional residual addition and activation — the unit every DeepLabV3
/// layer is built from (torchvision's `Conv2dNormActivation`, or a block's `convN`/`bnN` pair).
///
/// Eval mode runs one oneDNN convolution with batch norm folded into its weights and the residual sum and
/// activation fused as post-ops. Training mode runs convolution, batch norm with batch statistics, sum and
/// activation as separate primitives and keeps what `backward` needs.
final class ConvUnit {
    let conv: Conv2d
    let norm: BatchNorm2d?
    let activation: Activation

    init(conv: Conv2d, norm: BatchNorm2d?, activation: Activation) {
        self.conv = conv
        self.norm = norm
        self.activation = activation
    }

    /// `conv` named `convName`, batch norm named `normName`, as torchvision's blocks name them.
    convenience init(_ convName: String, _ normName: String?, inputChannels: Int, outputChannels: Int,
                     kernelSize: Int, stride: Int = 1, padding: Int = 0, dilation: Int = 1, groups: Int = 1,
                     bias: Bool = false, activation: Activation, generator: inout SeededGenerator) {
        let conv = Conv2d(name: convName, inputChannels: inputChannels, outputChannels: outputChannels,
                          kernelSize: kernelSize, stride: stride, padding: padding, dilation: dilation,
                          groups: groups, bias: bias, generator: &generator)
        self.init(conv: conv, norm: normName.map { BatchNorm2d(name: $0, channels: outputChannels) },
                  activation: activation)
    }

    var parameters: [Parameter] { conv.parameters + (norm?.parameters ?? []) }

    private let primitives = PrimitiveCache()
    /// Eval and training skip the taps of dilated 3×3 convolutions that read only padding (see `TapInterval`);
    /// false runs the whole convolution (tests compare the two).
    var skipsPaddingTaps = true
    /// Pad the convolution's input explicitly: nil when oneDNN's implicitly padded convolution would fall back
    /// from a direct kernel (see `choosePadding`); true or false forces it (tests compare the two).
    var padsExplicitly: Bool?
    /// Eval mode computes eligible 3×3 convolutions by Winograd's F(2×2, 3×3) (see `winogradApplies`); false
    /// runs oneDNN's direct convolution (tests compare the two).
    var usesWinograd = true
    /// Eval-mode weights in the Winograd domain, with the parameter version they were made from.
    var winogradWeights: (version: Int, transformed: [Float], bias: [Float])?
    let zonePrimitives = PrimitiveCache()
    var zoneWeightCache: [PrimitiveCache.Key: (version: Int, weights: Tensor)] = [:]
    /// Eval-mode weights and bias in the primitive's layout, with the parameter versions they were made from.
    private var foldedWeights: (key: DescKey, version: Int, weights: Tensor, bias: Tensor)?
    /// What the last training forward kept for backward, until backward has used it.
    private(set) var saved: Saved?

    struct Saved {
        let convolution: SavedConvolution
        let inputShape: [Int]
        let convOutput: Tensor
        let normPrimitive: Primitive?
        let mean: Tensor?
        let variance: Tensor?
        /// A `*_use_dst_for_bwd` activation, whose backward reads `output`.
        let activationPrimitive: Primitive?
        let output: Tensor
        let hasResidual: Bool
    }

    /// How the training forward computed the convolution, with what its backward needs.
    enum SavedConvolution {
        /// One primitive on `input` (the unit's input, or with `explicitPadding` that input padded).
        case whole(input: Tensor, primitive: Primitive, explicitPadding: Bool)
        /// One primitive per rectangle of `plan` (see `paddingFreeTrainingForward`).
        case rectangles(input: Tensor, plan: TapPlan)
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
    func callAsFunction(_ x: Tensor, residual: Tensor? = nil, consumingResidual: Bool = false,
                        training: Bool) throws -> Tensor {
        training ? try trainingForward(x, residual: residual)
            : try inferenceForward(x, residual: residual, consumingResidual: consumingResidual)
    }

    // MARK: Eval

    private func inferenceForward(_ x: Tensor, residual: Tensor?, consumingResidual: Bool) throws -> Tensor {
        saved = nil
        if residual == nil, let plan = paddingFreePlan(x.shape) {
            return try paddingFreeForward(x, plan: plan)
        }
        if winogradApplies(residual: residual) { return try winogradForward(x) }
        let (primitive, padded) = try choosePadding { explicitPadding in
            try primitives.primitive(PrimitiveCache.Key("eval", x.shape, residual != nil, explicitPadding)) {
                let op = try conv.forwardDescriptor(x.shape, training: false, withBias: true,
                                                    explicitPadding: explicitPadding)
                var postOps: [PrimitiveAttributes.PostOp] = residual != nil ? [.sum] : []
                if let p = activation.postOp { postOps.append(p) }
                return try Primitive("convolution", op: op, attributes: PrimitiveAttributes(postOps: postOps))
            }
        }
        let input = padded ? try paddedCopy(x, desc: primitive.desc(.source))
            : try x.reordered(to: primitive.desc(.source))
        let (weights, bias) = try preparedInferenceWeights(primitive)
        let dstDesc = primitive.desc(.destination)
        let output: Tensor
        if let residual, consumingResidual, residual.desc.isEqual(to: dstDesc) {
            output = residual
        } else {
            output = try Tensor(desc: dstDesc)
            if let residual { try residual.reorder(into: output) }
        }
        try primitive.execute([(Arg.src, input), (Arg.weights, weights), (Arg.bias, bias), (Arg.dst, output)])
        return output
    }

    /// The convolution primitive `make(explicitPadding)` to run. oneDNN's direct kernels take no more padding
    /// than their register blocking (3 columns on AVX2), so a convolution dilated further falls back to a GEMM
    /// with layout changes around it; padding the input explicitly (its interior copied into a zeroed tensor,
    /// `paddedCopy`) puts it back on the direct kernel. `padsExplicitly` nil makes that choice, true or false
    /// forces one.
    private func choosePadding(_ make: (Bool) throws -> Primitive) throws -> (Primitive, explicit: Bool) {
        guard conv.window.padding > 0, padsExplicitly != false else { return (try make(false), false) }
        if padsExplicitly == true { return (try make(true), true) }
        let implicit = try make(false)
        if !implicit.isDirectKernel, let padded = try? make(true), padded.isDirectKernel { return (padded, true) }
        return (implicit, false)
    }

    /// `x` copied into the interior of a zeroed tensor of `desc` (the input padded by the convolution's padding).
    private func paddedCopy(_ x: Tensor, desc: MemoryDesc) throws -> Tensor {
        let padded = try Tensor.zeros(like: desc)
        let p = conv.window.padding, s = x.shape
        try x.reorder(into: padded.spatialView(rows: p..<(p + s[2]), columns: p..<(p + s[3])))
        return padded
    }

    private func preparedInferenceWeights(_ primitive: Primitive) throws -> (Tensor, Tensor) {
        let desc = primitive.desc(.weights)
        let version = parameterVersion
        if let f = foldedWeights, f.version == version, f.key == desc.cacheKey { return (f.weights, f.bias) }
        let (w, b) = foldedPlainWeights()
        let plain = try Tensor(plain: conv.weightDims, values: w)
        let weights = try plain.reordered(to: desc)
        let bias = try Tensor(plain: [conv.outputChannels], values: b)
        foldedWeights = (desc.cacheKey, version, weights, bias)
        return (weights, bias)
    }

    /// The weights and bias with batch norm folded in, in PyTorch's plain [O, I, k, k] order.
    func foldedPlainWeights() -> (weights: [Float], bias: [Float]) {
        guard let norm else {
            return (conv.weight.value, conv.bias?.value ?? [Float](repeating: 0, count: conv.outputChannels))
        }
        return norm.fold(weights: conv.weight.value, bias: conv.bias?.value)
    }

    // MARK: Training

    private func trainingForward(_ x: Tensor, residual: Tensor?) throws -> Tensor {
        // Eval-mode weights (from a validation pass) are stale once training updates the parameters.
        foldedWeights = nil
        winogradWeights = nil
        zoneWeightCache.removeAll()
        let (convOutput, convolution) = if let plan = paddingFreePlan(x.shape) {
            try paddingFreeTrainingForward(x, plan: plan)
        } else {
            try wholeTrainingConvolution(x)
        }
        var current = convOutput
        var normPrimitive: Primitive?
        var mean: Tensor?, variance: Tensor?
        if let norm {
            let p = try primitives.primitive(PrimitiveCache.Key("bn", convOutput.desc.cacheKey)) {
                try Primitive("batch normalization",
                              op: BatchNormalizationOp.trainingForward(convOutput.desc, epsilon: norm.epsilon))
            }
            let out = try Tensor(desc: convOutput.desc)
            let m = try Tensor(desc: p.desc(.destination, 1))
            let v = try Tensor(desc: p.desc(.destination, 2))
            let scale = try Tensor(plain: [norm.channels], values: norm.weight.value)
            let shift = try Tensor(plain: [norm.channels], values: norm.bias.value)
            try p.execute([(Arg.src, convOutput), (Arg.dst, out), (Arg.mean, m), (Arg.variance, v),
                           (Arg.scale, scale), (Arg.shift, shift)])
            let s = convOutput.shape
            norm.updateRunningStatistics(mean: m.withStorage { Array($0.prefix(norm.channels)) },
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
            let (y, p) = try Operations.eltwise(current, .reluUsingDestination, training: true,
                                                inPlace: true)
            current = y
            activationPrimitive = p
        case .relu6:
            let (y, p) = try Operations.eltwise(current, .clipUsingDestination, alpha: 0, beta: 6,
                                                training: true, inPlace: true)
            current = y
            activationPrimitive = p
        }
        saved = Saved(convolution: convolution, inputShape: x.shape, convOutput: convOutput,
                      normPrimitive: normPrimitive, mean: mean, variance: variance,
                      activationPrimitive: activationPrimitive, output: current, hasResidual: residual != nil)
        return current
    }

    /// The training-mode convolution as one primitive.
    private func wholeTrainingConvolution(_ x: Tensor) throws -> (output: Tensor, saved: SavedConvolution) {
        let hasBias = conv.bias != nil
        let (primitive, explicitPadding) = try choosePadding { explicitPadding in
            try primitives.primitive(PrimitiveCache.Key("train", x.shape, explicitPadding)) {
                try Primitive("convolution", op: conv.forwardDescriptor(x.shape, training: true, withBias: hasBias,
                                                                        explicitPadding: explicitPadding))
            }
        }
        // Converted for this forward alone (they change at every step); backward converts them again rather than
        // keeping a second copy of every weight through the step.
        let weights = try Tensor(plain: conv.weightDims, values: conv.weight.value)
            .reordered(to: primitive.desc(.weights))
        let input = explicitPadding ? try paddedCopy(x, desc: primitive.desc(.source))
            : try x.reordered(to: primitive.desc(.source))
        let output = try Tensor(desc: primitive.desc(.destination))
        var arguments: [(Int32, Tensor)] = [(Arg.src, input), (Arg.weights, weights), (Arg.dst, output)]
        if let bias = conv.bias { arguments.append((Arg.bias, try Tensor(plain: [conv.outputChannels], values: bias.value))) }
        try primitive.execute(arguments)
        return (output, .whole(input: input, primitive: primitive, explicitPadding: explicitPadding))
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
            gradient = try Operations.eltwiseBackward(gradient, destination: saved.output, forward: forward,
                                                      primitives: primitives)
        }
        let residualGradient: Tensor? = saved.hasResidual ? gradient : nil
        if let norm, let normPrimitive = saved.normPrimitive, let mean = saved.mean, let variance = saved.variance {
            let p = try primitives.primitive(PrimitiveCache.Key("bn-backward", saved.convOutput.desc.cacheKey)) {
                try Primitive("batch normalization backward",
                              op: BatchNormalizationOp.backward(saved.convOutput.desc, epsilon: norm.epsilon),
                              hint: normPrimitive)
            }
            let diffSource = try Tensor(desc: saved.convOutput.desc)
            let scale = try Tensor(plain: [norm.channels], values: norm.weight.value)
            let shift = try Tensor(plain: [norm.channels], values: norm.bias.value)
            let diffScale = try Tensor(plain: [norm.channels], values: [Float](repeating: 0, count: norm.channels))
            let diffShift = try Tensor(plain: [norm.channels], values: [Float](repeating: 0, count: norm.channels))
            let g = try gradient.reordered(to: saved.convOutput.desc)
            try p.execute([(Arg.src, saved.convOutput), (Arg.mean, mean), (Arg.variance, variance), (Arg.diffDst, g),
                           (Arg.scale, scale), (Arg.shift, shift), (Arg.diffSrc, diffSource),
                           (Arg.diffScale, diffScale), (Arg.diffShift, diffShift)])
            accumulate(norm.weight, diffScale)
            accumulate(norm.bias, diffShift)
            gradient = diffSource
        }
        switch saved.convolution {
        case let .rectangles(input, plan):
            return (try paddingFreeBackward(gradient, input: input, plan: plan, needsInputGradient: needsInputGradient),
                    residualGradient)
        case let .whole(input, primitive, explicitPadding):
            let dx = try wholeConvolutionBackward(gradient, input: input, inputShape: saved.inputShape,
                                                  primitive: primitive, explicitPadding: explicitPadding,
                                                  needsInputGradient: needsInputGradient)
            return (dx, residualGradient)
        }
    }

    /// Backward of the training convolution as one primitive: weight and bias gradients accumulated, the input's
    /// returned when `needsInputGradient`.
    private func wholeConvolutionBackward(_ gradient: Tensor, input: Tensor, inputShape: [Int], primitive: Primitive,
                                          explicitPadding: Bool, needsInputGradient: Bool) throws -> Tensor? {
        let s = input.shape
        let o = conv.outputDims(inputShape)
        let geometry = conv.geometry(inputShape, explicitPadding: explicitPadding)
        let hasBias = conv.bias != nil

        // Weights (and bias) gradients.
        let weightsKey = PrimitiveCache.Key("conv-backward-weights", s, explicitPadding)
        let weightsPrimitive = try primitives.primitive(weightsKey) {
            try Primitive("convolution backward weights", op: ConvolutionOp.backwardWeights(
                source: s, weights: conv.weightDims, destination: o, bias: hasBias, geometry), hint: primitive)
        }
        let diffDst = try gradient.reordered(to: weightsPrimitive.desc(.diffDestination))
        let source = try input.reordered(to: weightsPrimitive.desc(.source))
        let diffWeights = try Tensor(desc: weightsPrimitive.desc(.diffWeights))
        var arguments: [(Int32, Tensor)] = [(Arg.src, source), (Arg.diffDst, diffDst), (Arg.diffWeights, diffWeights)]
        var diffBias: Tensor?
        if hasBias {
            let b = try Tensor(desc: weightsPrimitive.desc(.diffWeights, 1))
            arguments.append((Arg.diffBias, b))
            diffBias = b
        }
        try weightsPrimitive.execute(arguments)
        let plainWeights = try diffWeights.reordered(to: .make(conv.weightDims, MemoryDesc.plainTag(rank: conv.weightDims.count)))
        accumulate(conv.weight, plainWeights)
        if let bias = conv.bias, let diffBias { accumulate(bias, diffBias) }

        guard needsInputGradient else { return nil }
        let dataKey = PrimitiveCache.Key("conv-backward-data", s, explicitPadding)
        let dataPrimitive = try primitives.primitive(dataKey) {
            try Primitive("convolution backward data", op: ConvolutionOp.backwardData(
                source: s, weights: conv.weightDims, destination: o, geometry), hint: primitive)
        }
        let weights = try Tensor(plain: conv.weightDims, values: conv.weight.value)
            .reordered(to: dataPrimitive.desc(.weights))
        let diffInput = try Tensor(desc: dataPrimitive.desc(.diffSource))
        try dataPrimitive.execute([(Arg.diffDst, try gradient.reordered(to: dataPrimitive.desc(.diffDestination))),
                                   (Arg.weights, weights), (Arg.diffSrc, diffInput)])
        guard explicitPadding else { return diffInput }
        // The padded input's gradient; the input's is its interior.
        let p = conv.window.padding, x = inputShape
        let interior = try diffInput.spatialView(rows: p..<(p + x[2]), columns: p..<(p + x[3]))
        return try interior.reordered(to: .make(x, MemoryDesc.formatTag(of: diffInput.desc)))
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
