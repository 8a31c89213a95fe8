/// A `ConvUnit`'s convolution as one oneDNN convolution primitive: in eval mode with batch norm folded into its
/// weights and the residual sum and activation fused as post-ops. It applies to every unit, so it is the last
/// strategy a unit asks.
final class DirectConvolution: ConvolutionStrategy {
    /// Where the convolution's zero padding comes from.
    enum Padding {
        /// Explicit when oneDNN's implicitly padded convolution would fall back from a direct kernel.
        case automatic
        /// oneDNN pads inside the primitive.
        case implicit
        /// The input is copied into a zeroed, larger tensor and the primitive pads nothing.
        case explicit
    }

    let padding: Padding
    private let primitives = PrimitiveCache()
    /// Eval-mode weights and bias in the primitive's layout, with the parameter versions they were made from.
    private var foldedWeights: (version: Int, weights: Tensor, bias: Tensor)?

    init(padding: Padding = .automatic) {
        self.padding = padding
    }

    func applies(to unit: ConvUnit, inputShape: [Int], residual: Bool, training: Bool) -> Bool { true }

    func releaseInferenceWeights() { foldedWeights = nil }

    // MARK: Eval

    func inferenceForward(
        _ unit: ConvUnit, _ x: Tensor, residual: Tensor?,
        consumingResidual: Bool
    ) throws -> Tensor {
        let (primitive, padded) = try choosePadding(unit) { explicitPadding in
            try primitives.primitive(PrimitiveCache.Key("eval", x.shape, residual != nil, explicitPadding)) {
                let op = try unit.conv.forwardDescriptor(
                    x.shape, training: false, withBias: true,
                    explicitPadding: explicitPadding)
                var postOps: [PrimitiveAttributes.PostOp] = residual != nil ? [.sum] : []
                if let p = unit.activation.postOp { postOps.append(p) }
                return try Primitive("convolution", op: op, attributes: PrimitiveAttributes(postOps: postOps))
            }
        }
        let input =
            padded
            ? try paddedCopy(unit, x, desc: primitive.desc(.source))
            : try x.reordered(to: primitive.desc(.source))
        let (weights, bias) = try preparedInferenceWeights(unit, primitive)
        let output = try fusedSumDestination(
            primitive.desc(.destination), residual: residual,
            consumingResidual: consumingResidual)
        try primitive.execute([(Arg.src, input), (Arg.weights, weights), (Arg.bias, bias), (Arg.dst, output)])
        return output
    }

    /// The convolution primitive `make(explicitPadding)` to run. oneDNN's direct kernels take no more padding
    /// than their register blocking (3 columns on AVX2), so a convolution dilated further falls back to a GEMM
    /// with layout changes around it; padding the input explicitly (its interior copied into a zeroed tensor,
    /// `paddedCopy`) puts it back on the direct kernel. `.automatic` makes that choice, the others force one.
    private func choosePadding(
        _ unit: ConvUnit,
        _ make: (Bool) throws -> Primitive
    ) throws -> (Primitive, explicit: Bool) {
        guard unit.conv.window.padding > 0, padding != .implicit else { return (try make(false), false) }
        if padding == .explicit { return (try make(true), true) }
        let implicit = try make(false)
        if !implicit.isDirectKernel, let padded = try? make(true), padded.isDirectKernel { return (padded, true) }
        return (implicit, false)
    }

    /// `x` copied into the interior of a tensor of `desc` whose padding is zeroed (the input padded by the
    /// convolution's padding). Channels last (what oneDNN's `jit_dw` takes), only the padding is zeroed, rows split
    /// among the compute threads: zeroing the whole tensor serially (27 MB for ASPP's rate-6 branch on a 537 × 437
    /// slice) took 2.3 % of a volume's samples on the first thread while the second waited (Benchmarks/README.md).
    private func paddedCopy(_ unit: ConvUnit, _ x: Tensor, desc: MemoryDesc) throws -> Tensor {
        let p = unit.conv.window.padding
        let s = x.shape
        let padded: Tensor
        if MemoryDesc.formatTag(of: desc) == .channelsLast {
            padded = try Tensor(desc: desc)
            let (height, width, channels) = (desc.shape[2], desc.shape[3], s[1])
            padded.withStorage { values in
                concurrentForEach(0..<(s[0] * height)) { index in
                    let (row, start) = (index % height, index * width * channels)
                    if row < p || row >= p + s[2] {
                        values[start..<(start + width * channels)].update(repeating: 0)
                    } else {
                        values[start..<(start + p * channels)].update(repeating: 0)
                        values[(start + (p + s[3]) * channels)..<(start + width * channels)].update(repeating: 0)
                    }
                }
            }
        } else {
            padded = try Tensor.zeros(like: desc)
        }
        try x.reorder(into: padded.spatialView(rows: p..<(p + s[2]), columns: p..<(p + s[3])))
        return padded
    }

    private func preparedInferenceWeights(_ unit: ConvUnit, _ primitive: Primitive) throws -> (Tensor, Tensor) {
        let desc = primitive.desc(.weights)
        let version = unit.parameterVersion
        if let f = foldedWeights, f.version == version, f.weights.desc.isEqual(to: desc) { return (f.weights, f.bias) }
        let (w, b) = unit.foldedPlainWeights()
        let plain = try Tensor(plain: unit.conv.weightDims, values: w)
        let weights = try plain.reordered(to: desc)
        let bias = try Tensor(plain: [unit.conv.outputChannels], values: b)
        foldedWeights = (version, weights, bias)
        return (weights, bias)
    }

    // MARK: Training

    func trainingForward(_ unit: ConvUnit, _ x: Tensor) throws -> (output: Tensor, saved: SavedConvolution) {
        let conv = unit.conv
        let hasBias = conv.bias != nil
        let (primitive, explicitPadding) = try choosePadding(unit) { explicitPadding in
            try primitives.primitive(PrimitiveCache.Key("train", x.shape, explicitPadding)) {
                try Primitive(
                    "convolution",
                    op: conv.forwardDescriptor(
                        x.shape, training: true, withBias: hasBias,
                        explicitPadding: explicitPadding))
            }
        }
        // Converted for this forward alone (they change at every step); backward converts them again rather than
        // keeping a second copy of every weight through the step.
        let weights = try Tensor(plain: conv.weightDims, values: conv.weight.value)
            .reordered(to: primitive.desc(.weights))
        let input =
            explicitPadding
            ? try paddedCopy(unit, x, desc: primitive.desc(.source))
            : try x.reordered(to: primitive.desc(.source))
        let output = try Tensor(desc: primitive.desc(.destination))
        var arguments: [(Int32, Tensor)] = [(Arg.src, input), (Arg.weights, weights), (Arg.dst, output)]
        if let bias = conv.bias {
            arguments.append((Arg.bias, try Tensor(plain: [conv.outputChannels], values: bias.value)))
        }
        try primitive.execute(arguments)
        return (
            output,
            .whole(
                input: input, inputShape: x.shape, primitive: primitive,
                explicitPadding: explicitPadding)
        )
    }

    // MARK: Backward

    /// Rests on oneDNN's convolution backward-weights and backward-data primitives (`ConvolutionOp`).
    func backward(
        _ unit: ConvUnit, _ gradient: Tensor, saved: SavedConvolution,
        needsInputGradient: Bool
    ) throws -> Tensor? {
        guard case .whole(let input, let inputShape, let primitive, let explicitPadding) = saved else {
            throw DeepLabError.invalidBackward("the direct convolution's backward got another strategy's forward")
        }
        let conv = unit.conv
        let s = input.shape
        let o = conv.outputDims(inputShape)
        let geometry = conv.geometry(inputShape, explicitPadding: explicitPadding)
        let hasBias = conv.bias != nil

        // Weights (and bias) gradients.
        let weightsKey = PrimitiveCache.Key("conv-backward-weights", s, explicitPadding)
        let weightsPrimitive = try primitives.primitive(weightsKey) {
            try Primitive(
                "convolution backward weights",
                op: ConvolutionOp.backwardWeights(
                    source: s, weights: conv.weightDims, destination: o, bias: hasBias, geometry), hint: primitive)
        }
        let diffDestination = try gradient.reordered(to: weightsPrimitive.desc(.diffDestination))
        try accumulateWeightGradients(
            conv, weightsPrimitive,
            source: input.reordered(to: weightsPrimitive.desc(.source)),
            diffDestination: diffDestination)

        guard needsInputGradient else { return nil }
        let dataKey = PrimitiveCache.Key("conv-backward-data", s, explicitPadding)
        let dataPrimitive = try primitives.primitive(dataKey) {
            try Primitive(
                "convolution backward data",
                op: ConvolutionOp.backwardData(
                    source: s, weights: conv.weightDims, destination: o, geometry), hint: primitive)
        }
        let weights = try Tensor(plain: conv.weightDims, values: conv.weight.value)
            .reordered(to: dataPrimitive.desc(.weights))
        let diffInput = try Tensor(desc: dataPrimitive.desc(.diffSource))
        try dataPrimitive.execute([
            (Arg.diffDst, try gradient.reordered(to: dataPrimitive.desc(.diffDestination))),
            (Arg.weights, weights), (Arg.diffSrc, diffInput)
        ])
        guard explicitPadding else { return diffInput }
        // The padded input's gradient; the input's is its interior.
        let p = conv.window.padding
        let x = inputShape
        let interior = try diffInput.spatialView(rows: p..<(p + x[2]), columns: p..<(p + x[3]))
        return try interior.reordered(to: .make(x, MemoryDesc.formatTag(of: diffInput.desc)))
    }
}
