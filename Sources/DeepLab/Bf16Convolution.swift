/// A bf16 `ConvUnit`'s convolution, in eval mode and in training: the unit's input, its weights (batch norm
/// folded in eval mode; the f32 master weights converted afresh at every training forward and backward) and,
/// in backward, the gradient of its output are bf16; accumulation, the output, the bias and the weight and
/// input gradients are f32. The output stays f32, so batch norm (statistics and normalisation), the residual
/// sum, the activation, pooling, resampling, the loss and the optimizer all run in f32 on f32 values; eval mode
/// fuses the residual sum and activation as post-ops on the f32 output, as `DirectConvolution` does.
///
/// `Bf16Execution.native` runs oneDNN's bf16 primitives (AMX kernels); `.emulated` runs the same primitives
/// in f32 on operands rounded to bf16 (round-to-nearest-even) at the same points, so the path's logic runs
/// and is tested on any CPU. oneDNN pads inside the primitive (AMX kernels take any padding), so neither the
/// padding-free rectangles nor Winograd, schemes tuned on AVX2 (f32, and the rectangles in int8), apply to a
/// bf16 unit.
///
/// It applies to units whose `bf16` is set (`DeepLabV3.useBf16(_:)`), after int8 and before the f32 strategies. In eval mode a unit whose output only the next bf16 unit of its
/// block reads (`ConvUnit.bf16Output`) writes that output in bf16 (rounded f32 values when emulated), so the
/// expanded activations between them move at half the bytes and are not converted again.
final class Bf16Convolution: ConvolutionStrategy {
    private let primitives = PrimitiveCache()
    /// Eval-mode folded weights (bf16, or rounded f32) and f32 bias, with what they were made from.
    private var prepared: (version: Int, weights: Tensor, bias: Tensor)?

    /// Convolutions with fewer input channels stay in f32 (`DeepLabV3.float32UnitNamesUnderBf16`).
    static let minimumInputChannels = 8

    func applies(to unit: ConvUnit, inputShape: [Int], residual: Bool, training: Bool) -> Bool { runs(unit) }

    /// Whether `unit` runs here: set to bf16 and not quantised.
    func runs(_ unit: ConvUnit) -> Bool { unit.bf16 != nil && unit.quantization == nil }

    func releaseInferenceWeights() { prepared = nil }

    private func execution(_ unit: ConvUnit) throws -> Bf16Execution {
        guard let execution = unit.bf16 else {
            throw DeepLabError.invalidInput("bf16 convolution on an f32 unit \(unit.name)")
        }
        return execution
    }

    // MARK: Eval

    func inferenceForward(
        _ unit: ConvUnit, _ x: Tensor, residual: Tensor?,
        consumingResidual: Bool
    ) throws -> Tensor {
        let execution = try execution(unit)
        let conv = unit.conv
        let bf16Output = unit.bf16Output && residual == nil
        let key = PrimitiveCache.Key("eval", x.shape, residual != nil, execution, bf16Output)
        let primitive = try primitives.primitive(key) {
            let op = try ConvolutionOp.forward(
                source: x.shape, weights: conv.weightDims,
                destination: conv.outputDims(x.shape), bias: true, training: false,
                conv.geometry(x.shape), bf16: execution, bf16Output: bf16Output)
            var postOps: [PrimitiveAttributes.PostOp] = residual != nil ? [.sum] : []
            if let p = unit.activation.postOp { postOps.append(p) }
            return try Primitive("bf16 convolution", op: op, attributes: PrimitiveAttributes(postOps: postOps))
        }
        let input = try Bf16Operations.convert(x, into: primitive.desc(.source), execution)
        let (weights, bias) = try preparedWeights(unit, primitive, execution)
        let output = try fusedSumDestination(
            primitive.desc(.destination), residual: residual,
            consumingResidual: consumingResidual)
        try primitive.execute([(Arg.src, input), (Arg.weights, weights), (Arg.bias, bias), (Arg.dst, output)])
        if bf16Output, execution == .emulated { Bf16Operations.roundToBfloat16(output) }
        return output
    }

    private func preparedWeights(
        _ unit: ConvUnit, _ primitive: Primitive,
        _ execution: Bf16Execution
    ) throws -> (Tensor, Tensor) {
        let desc = primitive.desc(.weights)
        let version = unit.parameterVersion
        if let p = prepared, p.version == version, p.weights.desc.isEqual(to: desc) { return (p.weights, p.bias) }
        let (w, b) = unit.foldedPlainWeights()
        let weights = try Bf16Operations.convert(
            Tensor(plain: unit.conv.weightDims, values: w), into: desc,
            execution)
        let bias = try Tensor(plain: [unit.conv.outputChannels], values: b)
        prepared = (version, weights, bias)
        return (weights, bias)
    }

    // MARK: Training

    func trainingForward(_ unit: ConvUnit, _ x: Tensor) throws -> (output: Tensor, saved: SavedConvolution) {
        let execution = try execution(unit)
        let conv = unit.conv
        let hasBias = conv.bias != nil
        let primitive = try primitives.primitive(PrimitiveCache.Key("train", x.shape, execution)) {
            try Primitive(
                "bf16 convolution",
                op: ConvolutionOp.forward(
                    source: x.shape, weights: conv.weightDims, destination: conv.outputDims(x.shape), bias: hasBias,
                    training: true, conv.geometry(x.shape), bf16: execution))
        }
        // The f32 master weights, converted for this forward alone (backward converts them again).
        let weights = try masterWeights(conv, into: primitive.desc(.weights), execution)
        // Kept in bf16 for backward's weight gradient: half the f32 input's memory natively.
        let input = try Bf16Operations.convert(x, into: primitive.desc(.source), execution)
        let output = try Tensor(desc: primitive.desc(.destination))
        var arguments: [(Int32, Tensor)] = [(Arg.src, input), (Arg.weights, weights), (Arg.dst, output)]
        if let bias = conv.bias {
            arguments.append((Arg.bias, try Tensor(plain: [conv.outputChannels], values: bias.value)))
        }
        try primitive.execute(arguments)
        return (output, .whole(input: input, inputShape: x.shape, primitive: primitive, explicitPadding: false))
    }

    /// The f32 master weights in a primitive's bf16 operand layout `desc`.
    private func masterWeights(
        _ conv: Conv2d, into desc: MemoryDesc,
        _ execution: Bf16Execution
    ) throws -> Tensor {
        try Bf16Operations.convert(Tensor(plain: conv.weightDims, values: conv.weight.value), into: desc, execution)
    }

    // MARK: Backward

    /// The weight gradient from the bf16 input and output gradient, the input gradient from the bf16 output
    /// gradient and weights, both accumulated in f32 and returned in f32. Rests on oneDNN's convolution
    /// backward-weights and backward-data primitives (`ConvolutionOp`).
    func backward(
        _ unit: ConvUnit, _ gradient: Tensor, saved: SavedConvolution,
        needsInputGradient: Bool
    ) throws -> Tensor? {
        guard case .whole(let input, let inputShape, let primitive, _) = saved else {
            throw DeepLabError.invalidBackward("the bf16 convolution's backward got another strategy's forward")
        }
        let execution = try execution(unit)
        let conv = unit.conv
        let o = conv.outputDims(inputShape)
        let geometry = conv.geometry(inputShape)
        let hasBias = conv.bias != nil

        let weightsKey = PrimitiveCache.Key("backward-weights", inputShape, execution)
        let weightsPrimitive = try primitives.primitive(weightsKey) {
            try Primitive(
                "bf16 convolution backward weights",
                op: ConvolutionOp.backwardWeights(
                    source: inputShape, weights: conv.weightDims, destination: o, bias: hasBias, geometry,
                    bf16: execution), hint: primitive)
        }
        let diffDst = try Bf16Operations.convert(
            gradient, into: weightsPrimitive.desc(.diffDestination),
            execution)
        try accumulateWeightGradients(
            conv, weightsPrimitive,
            source: input.reordered(to: weightsPrimitive.desc(.source)),
            diffDestination: diffDst)

        guard needsInputGradient else { return nil }
        let dataPrimitive = try primitives.primitive(PrimitiveCache.Key("backward-data", inputShape, execution)) {
            try Primitive(
                "bf16 convolution backward data",
                op: ConvolutionOp.backwardData(
                    source: inputShape, weights: conv.weightDims, destination: o, geometry, bf16: execution),
                hint: primitive)
        }
        let weights = try masterWeights(conv, into: dataPrimitive.desc(.weights), execution)
        let dataDiffDst =
            try dataPrimitive.desc(.diffDestination).isEqual(to: diffDst.desc)
            ? diffDst
            : Bf16Operations.convert(gradient, into: dataPrimitive.desc(.diffDestination), execution)
        let diffInput = try Tensor(desc: dataPrimitive.desc(.diffSource))
        try dataPrimitive.execute([(Arg.diffDst, dataDiffDst), (Arg.weights, weights), (Arg.diffSrc, diffInput)])
        return diffInput
    }
}
