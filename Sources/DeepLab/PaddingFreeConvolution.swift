/// An interval of output positions along one spatial axis of a 3×3 convolution dilated by `rate` (padding
/// `rate`, stride 1) within which the same kernel taps read inside the input. The others read only zero
/// padding, so they add nothing and can be skipped: at ASPP's rates (12, 24, 36 at output stride 8) on a
/// 64×64 feature map, more than a third of the multiply-adds fall in the padding.
struct TapInterval: Hashable, RawKeyPart {
    /// Output positions (the same as input positions: the convolution keeps the extent).
    let outputs: Range<Int>
    /// Kernel indices (0…2) that read inside the input for every output position of the interval.
    let taps: ClosedRange<Int>

    /// The input positions the interval's taps read.
    func inputs(rate: Int) -> Range<Int> {
        (outputs.lowerBound + (taps.lowerBound - 1) * rate)..<(outputs.upperBound + (taps.upperBound - 1) * rate)
    }

    /// The intervals covering `0..<extent`: tap 0 reads inside from `rate` on, tap 2 up to `extent − rate`, so
    /// those two points cut the axis into at most three intervals.
    static func intervals(extent: Int, rate: Int) -> [TapInterval] {
        let cuts = Set([0, rate, extent - rate, extent].map { min(max($0, 0), extent) }).sorted()
        return zip(cuts, cuts.dropFirst()).map { low, high in
            let first = low - rate >= 0 ? 0 : 1
            let last = high - 1 + rate <= extent - 1 ? 2 : 1
            return TapInterval(outputs: low..<high, taps: first...last)
        }
    }

    /// Multiply-adds along this axis relative to all three taps everywhere.
    static func workFraction(_ intervals: [TapInterval]) -> Double {
        let total = intervals.reduce(0) { $0 + $1.outputs.count * 3 }
        return Double(intervals.reduce(0) { $0 + $1.outputs.count * $1.taps.count }) / Double(max(total, 1))
    }
}

/// The rectangles a padding-free convolution is computed in: every pair of a row and a column interval.
typealias TapPlan = (rows: [TapInterval], columns: [TapInterval])

/// A dilated 3×3 convolution (stride 1, padding equal to the dilation) as one convolution per rectangle of
/// output (`TapPlan`), each with only the taps that read inside the input, when the padding taps are at least a
/// tenth of the work; in eval mode a large all-taps rectangle may go to `centre` (Winograd).
final class PaddingFreeConvolution: ConvolutionStrategy {
    /// Computes the all-taps rectangle in eval mode where it applies (see `WinogradConvolution.computesRectangle`).
    let centre: WinogradConvolution?
    private let zonePrimitives = PrimitiveCache()
    /// Eval-mode sub-kernels (and the folded bias), with the parameter version they were made from.
    private var zoneWeightCache: [PrimitiveCache.Key: (version: Int, weights: Tensor)] = [:]

    init(centre: WinogradConvolution? = nil) {
        self.centre = centre
    }

    /// Eval without a residual input, or training, where `plan(for:inputShape:)` finds rectangles.
    func applies(to unit: ConvUnit, inputShape: [Int], residual: Bool, training: Bool) -> Bool {
        (training || !residual) && Self.plan(for: unit, inputShape: inputShape) != nil
    }

    func releaseInferenceWeights() { zoneWeightCache.removeAll() }

    /// The rectangles to compute separately when `unit` is a dilated 3×3 convolution on an input of dims `s`
    /// whose padding taps are at least a tenth of the work; nil otherwise.
    static func plan(for unit: ConvUnit, inputShape s: [Int]) -> TapPlan? {
        let w = unit.conv.window
        guard unit.conv.groups == 1, w.kernel == 3, w.stride == 1, w.dilation > 1,
            w.padding == w.dilation
        else { return nil }
        let rows = TapInterval.intervals(extent: s[2], rate: w.dilation)
        let columns = TapInterval.intervals(extent: s[3], rate: w.dilation)
        guard TapInterval.workFraction(rows) * TapInterval.workFraction(columns) <= 0.9 else { return nil }
        return (rows, columns)
    }

    /// Eval-mode forward of a dilated 3×3 convolution as one convolution per rectangle of `plan`, each with only
    /// the taps that read inside the input (a 1×1 to 3×3 kernel, the same dilation, no padding) and the unit's
    /// folded batch norm and fused activation. The whole input and output stay in the layout the rectangles'
    /// direct kernels use (blocked by channels), so each rectangle's input and output is a strided copy of a
    /// view, not a change of layout. (The whole padded convolution, whose layouts these used to be, falls back to
    /// a plain-layout GEMM at ASPP's rates.)
    ///
    /// Rests on `ConvolutionOp.forward` and submemory reorders.
    func inferenceForward(
        _ unit: ConvUnit, _ x: Tensor, residual: Tensor?,
        consumingResidual: Bool
    ) throws -> Tensor {
        precondition(residual == nil, "padding-free rectangles take no residual input")
        guard let plan = Self.plan(for: unit, inputShape: x.shape) else {
            throw DeepLabError.invalidInput("no padding-free rectangles for this convolution on \(x.shape)")
        }
        // Folding batch norm is needed only when a rectangle's weights are not cached yet.
        lazy var folded = unit.foldedPlainWeights()
        lazy var kernel = Result { try Tensor(plain: unit.conv.weightDims, values: folded.weights) }
        let biasKey = PrimitiveCache.Key("bias")
        let biasTensor: Tensor
        if let cached = zoneWeightCache[biasKey], cached.version == unit.parameterVersion {
            biasTensor = cached.weights
        } else {
            biasTensor = try Tensor(plain: [unit.conv.outputChannels], values: folded.bias)
            zoneWeightCache[biasKey] = (unit.parameterVersion, biasTensor)
        }
        return try rectangleForward(
            unit, x, plan: plan, training: false, kernel: { try kernel.get() },
            bias: biasTensor
        ).output
    }

    /// Training-mode forward of the convolution alone (batch norm and activation follow it as usual) by the
    /// rectangles of its plan, with the unit's own weights. Returns the output and what `backward` needs.
    func trainingForward(_ unit: ConvUnit, _ x: Tensor) throws -> (output: Tensor, saved: SavedConvolution) {
        guard let plan = Self.plan(for: unit, inputShape: x.shape) else {
            throw DeepLabError.invalidInput("no padding-free rectangles for this convolution on \(x.shape)")
        }
        let bias = try unit.conv.bias.map { try Tensor(plain: [unit.conv.outputChannels], values: $0.value) }
        let kernel = try Tensor(plain: unit.conv.weightDims, values: unit.conv.weight.value)
        let (input, output) = try rectangleForward(
            unit, x, plan: plan, training: true, kernel: { kernel },
            bias: bias)
        return (output, .rectangles(input: input, plan: plan))
    }

    /// The forward pass shared by eval and training: `x` and the output in the blocked layout of the rectangles'
    /// primitives, each rectangle's input copied out of a view of `x` and its output into a view of the output
    /// (in eval, a large all-taps rectangle is computed by `centre` in place instead).
    private func rectangleForward(
        _ unit: ConvUnit, _ x: Tensor, plan: TapPlan, training: Bool,
        kernel: () throws -> Tensor,
        bias: Tensor?
    ) throws -> (input: Tensor, output: Tensor) {
        let s = x.shape
        let rate = unit.conv.window.dilation
        let tag = try blockedTag(unit, s, plan: plan, training: training)
        let input = try x.reordered(to: MemoryDesc.make(s, tag))
        let output = try Tensor(desc: MemoryDesc.make(unit.conv.outputDims(s), tag))
        for r in plan.rows {
            for c in plan.columns {
                if let centre,
                    centre.computesRectangle(of: unit, rows: r, columns: c, tag: tag, training: training)
                {
                    try centre.compute(unit, input, into: output, rows: r.outputs, columns: c.outputs)
                    continue
                }
                let primitive = try rectangle(unit, s, r, c, training: training)
                let weights = try zoneWeights(
                    unit, kernel, rows: r.taps, columns: c.taps, training: training,
                    desc: primitive.desc(.weights))
                try Self.execute(
                    primitive, rows: r, columns: c, rate: rate, input: input, output: output,
                    weights: weights, bias: bias)
            }
        }
        return (input, output)
    }

    /// Backward of `trainingForward`: per rectangle, the sub-kernel's weight (and bias) gradients are
    /// added into the parameters' and, when `needsInputGradient`, the rectangle's input gradient into the
    /// input's (the rectangles' inputs overlap). `dy` is dLoss/d(convolution output).
    ///
    /// Rests on `ConvolutionOp.backwardWeights`, `ConvolutionOp.backwardData` and accumulating reorders into
    /// submemory views.
    func backward(
        _ unit: ConvUnit, _ dy: Tensor, saved: SavedConvolution,
        needsInputGradient: Bool
    ) throws -> Tensor? {
        guard case .rectangles(let input, let plan) = saved else {
            throw DeepLabError.invalidBackward(
                "the padding-free convolution's backward got another strategy's "
                    + "forward")
        }
        let s = input.shape
        let rate = unit.conv.window.dilation
        let gradient = try dy.reordered(to: MemoryDesc.make(dy.shape, MemoryDesc.formatTag(of: input.desc)))
        let dx = needsInputGradient ? try Tensor.zeros(like: input.desc) : nil
        let hasBias = unit.conv.bias != nil
        lazy var kernel = Result { try Tensor(plain: unit.conv.weightDims, values: unit.conv.weight.value) }
        let kernelGradient = try Tensor.zeros(like: .make(unit.conv.weightDims, MemoryDesc.plainTag(rank: 4)))
        for r in plan.rows {
            for c in plan.columns {
                let forward = try rectangle(unit, s, r, c, training: true)
                let inRows = r.inputs(rate: rate)
                let inColumns = c.inputs(rate: rate)
                let dims = Self.rectangleDims(unit, s, r, c)
                let geometry = Self.rectangleGeometry(unit, r, c)
                let zoneGradient = try gradient.spatialView(rows: r.outputs, columns: c.outputs)

                let weightsPrimitive = try zonePrimitives.primitive(PrimitiveCache.Key("backward-weights", s, r, c)) {
                    try Primitive(
                        "convolution backward weights",
                        op: ConvolutionOp.backwardWeights(
                            source: dims.source, weights: dims.weights, destination: dims.destination, bias: hasBias,
                            geometry), hint: forward)
                }
                let zoneInput = try input.spatialView(rows: inRows, columns: inColumns)
                    .reordered(to: weightsPrimitive.desc(.source))
                let diffDst = try zoneGradient.reordered(to: weightsPrimitive.desc(.diffDestination))
                let diffWeights = try Tensor(desc: weightsPrimitive.desc(.diffWeights))
                var arguments = [(Arg.src, zoneInput), (Arg.diffDst, diffDst), (Arg.diffWeights, diffWeights)]
                let diffBias = hasBias ? try Tensor(desc: weightsPrimitive.desc(.diffWeights, 1)) : nil
                if let diffBias { arguments.append((Arg.diffBias, diffBias)) }
                try weightsPrimitive.execute(arguments)
                try diffWeights.accumulate(
                    into: kernelGradient.spatialView(rows: Range(r.taps), columns: Range(c.taps)))
                if let bias = unit.conv.bias, let diffBias { accumulate(bias, diffBias) }

                guard let dx else { continue }
                let dataPrimitive = try zonePrimitives.primitive(PrimitiveCache.Key("backward-data", s, r, c)) {
                    try Primitive(
                        "convolution backward data",
                        op: ConvolutionOp.backwardData(
                            source: dims.source, weights: dims.weights, destination: dims.destination, geometry),
                        hint: forward)
                }
                let weights = try zoneWeights(
                    unit, { try kernel.get() }, rows: r.taps, columns: c.taps,
                    training: true,
                    desc: dataPrimitive.desc(.weights))
                let diffSource = try Tensor(desc: dataPrimitive.desc(.diffSource))
                try dataPrimitive.execute([
                    (Arg.diffDst, try zoneGradient.reordered(to: dataPrimitive.desc(.diffDestination))),
                    (Arg.weights, weights), (Arg.diffSrc, diffSource)
                ])
                try diffSource.accumulate(into: dx.spatialView(rows: inRows, columns: inColumns))
            }
        }
        accumulate(unit.conv.weight, kernelGradient)
        return dx
    }

    /// Runs one rectangle's forward `primitive` (f32 or int8): its input copied out of a view of the whole
    /// `input` (no copy where the view is all of it), its output copied into a view of the whole `output`.
    static func execute(
        _ primitive: Primitive, rows r: TapInterval, columns c: TapInterval, rate: Int,
        input: Tensor, output: Tensor, weights: Tensor, bias: Tensor?
    ) throws {
        let zoneInput = try input.spatialView(rows: r.inputs(rate: rate), columns: c.inputs(rate: rate))
            .reordered(to: primitive.desc(.source))
        let zoneOutput = try Tensor(desc: primitive.desc(.destination))
        var arguments = [(Arg.src, zoneInput), (Arg.weights, weights), (Arg.dst, zoneOutput)]
        if let bias { arguments.append((Arg.bias, bias)) }
        try primitive.execute(arguments)
        try zoneOutput.reorder(into: output.spatialView(rows: r.outputs, columns: c.outputs))
    }

    /// A rectangle's source, sub-kernel and destination dims for input dims `s`.
    static func rectangleDims(
        _ unit: ConvUnit, _ s: [Int], _ r: TapInterval,
        _ c: TapInterval
    ) -> (source: [Int], weights: [Int], destination: [Int]) {
        let rate = unit.conv.window.dilation
        return (
            [s[0], s[1], r.inputs(rate: rate).count, c.inputs(rate: rate).count],
            [unit.conv.outputChannels, unit.conv.inputChannels, r.taps.count, c.taps.count],
            [s[0], unit.conv.outputChannels, r.outputs.count, c.outputs.count]
        )
    }

    /// A rectangle's geometry: stride 1, no padding, the unit's dilation along an axis with more than one tap
    /// (none along one with a single tap, where it means nothing, so a 1×1 rectangle runs as a 1×1 convolution).
    static func rectangleGeometry(_ unit: ConvUnit, _ r: TapInterval, _ c: TapInterval) -> ConvolutionGeometry {
        let d = Int64(unit.conv.window.dilation - 1)
        return ConvolutionGeometry(
            strides: [1, 1], dilation: [r.taps.count > 1 ? d : 0, c.taps.count > 1 ? d : 0],
            left: [0, 0], right: [0, 0])
    }

    /// The primitive of one rectangle for input dims `s`: eval with the unit's activation fused (and the folded
    /// bias), or training (the unit's bias, if any; no post-ops).
    private func rectangle(
        _ unit: ConvUnit, _ s: [Int], _ r: TapInterval, _ c: TapInterval,
        training: Bool
    ) throws -> Primitive {
        try zonePrimitives.primitive(PrimitiveCache.Key(s, r, c, training)) {
            let dims = Self.rectangleDims(unit, s, r, c)
            let op = try ConvolutionOp.forward(
                source: dims.source, weights: dims.weights,
                destination: dims.destination, bias: !training || unit.conv.bias != nil,
                training: training, Self.rectangleGeometry(unit, r, c))
            let postOps = training ? [] : unit.activation.postOp.map { [$0] } ?? []
            return try Primitive("convolution", op: op, attributes: PrimitiveAttributes(postOps: postOps))
        }
    }

    /// The layout of the largest rectangle's (all taps) source, which the whole input and output take.
    private func blockedTag(_ unit: ConvUnit, _ s: [Int], plan: TapPlan, training: Bool) throws -> FormatTag {
        func widest(_ intervals: [TapInterval]) -> TapInterval { intervals.max { $0.taps.count < $1.taps.count }! }
        return MemoryDesc.formatTag(
            of: try rectangle(
                unit, s, widest(plan.rows), widest(plan.columns),
                training: training
            )
            .desc(.source))
    }

    /// The sub-kernel `rows` × `columns` of the plain [O, I, 3, 3] `kernel` (the folded weights in eval, the
    /// unit's own in training) in `desc`'s layout. In eval it is cached until the parameters change (`kernel` is
    /// called only on a miss); in training it is not kept (the weights change every step, and the rectangles'
    /// sub-kernels together hold several times the kernel).
    private func zoneWeights(
        _ unit: ConvUnit, _ kernel: () throws -> Tensor, rows: ClosedRange<Int>,
        columns: ClosedRange<Int>,
        training: Bool, desc: MemoryDesc
    ) throws -> Tensor {
        let key = PrimitiveCache.Key(rows, columns, desc)
        if !training, let cached = zoneWeightCache[key], cached.version == unit.parameterVersion {
            return cached.weights
        }
        let weights = try kernel().spatialView(rows: Range(rows), columns: Range(columns)).reordered(to: desc)
        if !training { zoneWeightCache[key] = (unit.parameterVersion, weights) }
        return weights
    }
}
