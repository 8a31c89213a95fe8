/// A quantised `ConvUnit`'s eval-mode convolution in int8 on oneDNN: the f32 input quantised to u8 or s8 with
/// the unit's calibrated scale, batch-norm-folded weights quantised to s8 per output channel, s32
/// accumulation, and output scales 1/(input scale · weight scale[o]) that return f32, with the bias (pre-scaled
/// into the accumulator's units, as oneDNN 2.6 adds it before the output scales), the residual sum and the
/// activation fused as post-ops.
///
/// Within a block (`Backbone.unitChains`), a unit whose output feeds only the next quantised unit writes it
/// already quantised (u8, with the next unit's input scale folded into its output scales and ReLU6's bound),
/// so activations stay 8-bit between those convolutions and the next unit skips its quantising reorder. Between
/// blocks (`Backbone.quantizableBlocks`) a block's input is quantised once at its entry, its identity is added
/// in int8 by a scaled `sum` post-op, and its output is written quantised for the next block where that block
/// reads it alone (see `DeepLabV3.apply(_:)`).
///
/// Where oneDNN's kernels lack VNNI (AVX2, AVX-512 without VNNI), u8 inputs are quantised with half the stored
/// scale, to 7 bits up to the calibrated threshold, so that `vpmaddubsw`'s pairwise 16-bit sums cannot saturate
/// (`effectiveInputScale`); the checkpoint's scales are the same on every CPU. Inputs above the threshold still
/// reach 255 there (the quantising reorder saturates at u8's bound), so that path clips at twice the threshold
/// where VNNI clips at the threshold itself: a calibration that clips too hard shows only with VNNI
/// (`Int8EmulationTests` holds both paths to the same bounds on any CPU).
///
/// It applies only to units that carry `quantization` (`ModelQuantization.apply(to:)`) and only in eval mode,
/// so it is the first strategy a unit asks; training and f32 models never see it.
final class Int8Convolution: ConvolutionStrategy {
    /// Whether a dilated 3×3 convolution whose padding taps are a tenth of the work or more runs as padding-free
    /// rectangles (`PaddingFreeConvolution.plan`), one int8 convolution each without the taps that read only
    /// padding (the effective ISA's `ConvolutionStrategyTable` entry). On AVX2, oneDNN's int8 kernel ran ASPP's
    /// padded dilated convolutions at about half its rate on the taps inside the input (DeepLabV3-ResNet-50,
    /// 2048 → 256 at rate 12 on 64 × 64: 162 ms, against 86 ms for its nine rectangles).
    let rectangles: Bool
    /// Whether u8-input 3×3 convolutions run by exact integer Winograd (`Int8Winograd`, AVX2 kernels; the
    /// effective ISA's `ConvolutionStrategyTable` entry).
    let winograd: Int8Winograd?
    /// Whether dilated convolutions avoid oneDNN's `jit:avx512_core_amx_int8` kernel for its `brgconv` ones
    /// (`ConvolutionStrategyTable.int8DilatedOnBrgconv`).
    let dilatedOnBrgconv: Bool
    /// Whether narrow 1 × 1 convolutions (`isNarrowPointwise`) avoid oneDNN's AMX kernels
    /// (`ConvolutionStrategyTable.int8NarrowPointwiseOffAMX`).
    let narrowPointwiseOffAMX: Bool
    private let primitives = PrimitiveCache()
    /// Quantised weights (the whole kernel, or a rectangle's taps) in a primitive's layout and the pre-scaled
    /// bias, with the parameter version and quantisation they were made from.
    private var prepared:
        [PrimitiveCache.Key: (
            version: Int, quantization: UnitQuantization, weights: Tensor,
            bias: Tensor
        )] = [:]
    /// `prepared`'s entries by the primitive that asked for them (whose taps never change: rectangles are primitives
    /// of their own): found by identity on every call instead of by hashing the weights' descriptor; primitives of
    /// the same weights layout share the tensors.
    private var preparedByPrimitive:
        [ObjectIdentifier: (
            primitive: Primitive, version: Int, quantization: UnitQuantization, weights: Tensor, bias: Tensor
        )] = [:]

    init(
        rectangles: Bool = false, winograd: Bool = false, dilatedOnBrgconv: Bool = false,
        narrowPointwiseOffAMX: Bool = false
    ) {
        self.rectangles = rectangles
        self.winograd = winograd ? Int8Winograd() : nil
        self.dilatedOnBrgconv = dilatedOnBrgconv
        self.narrowPointwiseOffAMX = narrowPointwiseOffAMX
    }

    /// A 1 × 1 convolution whose multiply-adds per byte of activations it reads and writes (K · N / (K + N · b) a
    /// pixel, K input and N output channels, b bytes an output value) are at most `narrowIntensity`.
    static func isNarrowPointwise(_ conv: Conv2d, quantizedOutput: Bool) -> Bool {
        guard conv.window.kernel == 1, conv.groups == 1 else { return false }
        let (k, n) = (Double(conv.inputChannels), Double(conv.outputChannels))
        return k * n / (k + n * (quantizedOutput ? 1 : 4)) <= narrowIntensity
    }

    /// See `isNarrowPointwise`. On the AMX Xeon (`segment --timings`, the bundled DeepLabV3+ model natively and
    /// capped to `AVX512_CORE_VNNI`) oneDNN's VNNI kernels ran the 1 × 1 units up to 26 multiply-adds a byte in
    /// 0.46–0.95 × the time of its AMX ones (16 → 96 on 233 × 197, 144 → 24, 112 → 64, 24 → 48…), those of 27 at
    /// par, those from 45 up 1.1–2 × slower.
    static let narrowIntensity = 26.5

    /// The scale the input is quantised with on this CPU (see the type's note on VNNI).
    static func effectiveInputScale(_ q: UnitQuantization) -> Float {
        q.inputType == .u8 && !Int8Operations.hasVNNI ? q.inputScale / 2 : q.inputScale
    }

    /// `x` quantised once at the entry of a block or of ASPP (named `name`, whose `--timings` row it is) with
    /// `entry`'s effective scale, in eval mode while it is still f32; nil when there is nothing to do (training, no
    /// entry quantisation, or already int8).
    static func quantizedEntry(_ x: Tensor, _ entry: UnitQuantization?, training: Bool, name: String) throws -> Tensor?
    {
        guard !training, let entry, !Int8Operations.isQuantized(x) else { return nil }
        return try LayerProfiling.operation(
            "\(name) entry", "quantize", bytes: { x.desc.byteCount + $0.desc.byteCount }
        ) {
            try Int8Operations.quantize(x, to: entry.inputType, scale: effectiveInputScale(entry))
        }
    }

    func applies(to unit: ConvUnit, inputShape: [Int], residual: Bool, training: Bool) -> Bool {
        !training && unit.quantization != nil
    }

    func releaseInferenceWeights() {
        prepared.removeAll()
        preparedByPrimitive.removeAll()
        configurations.removeAll()
        winograd?.releaseInferenceWeights()
    }

    func inferenceForward(
        _ unit: ConvUnit, _ x: Tensor, residual: Tensor?,
        consumingResidual: Bool
    ) throws -> Tensor {
        guard let q = unit.quantization else {
            throw DeepLabError.invalidInput("int8 convolution on an unquantised unit \(unit.name)")
        }
        let conv = unit.conv
        let inputScale = Int8Convolution.effectiveInputScale(q)
        // The output goes straight to the next unit(s), already quantised with their input scale, where
        // `DeepLabV3.apply` found that every reader takes the same quantisation.
        let next = unit.quantizedOutput
        let outputScale = next.map(Int8Convolution.effectiveInputScale) ?? 1
        let (configuration, outputScales) = self.configuration(
            q, next: next, inputScale: inputScale, outputScale: outputScale)
        // A quantised residual (the block's input, quantised at its entry) is added as integers times the
        // ratio of scales when the destination is quantised too, else dequantised into the f32 destination.
        var residualQuantization: UnitQuantization?
        if let residual, Int8Operations.isQuantized(residual) {
            guard let r = unit.quantizedResidual, Int8Operations.holds(residual, r.inputType) else {
                throw DeepLabError.invalidInput("\(unit.name): an int8 residual without its quantisation")
            }
            residualQuantization = r
        } else if residual != nil, next != nil {
            throw DeepLabError.invalidInput("\(unit.name): an f32 residual cannot be added into an int8 output")
        }
        let residualScale = residualQuantization.map(Int8Convolution.effectiveInputScale)
        let sum: PrimitiveAttributes.PostOp? =
            residual == nil
            ? nil
            : next != nil && residualScale != nil ? .scaledSum(outputScale / residualScale!) : .sum
        var postOps: [PrimitiveAttributes.PostOp] = sum.map { [$0] } ?? []
        switch unit.activation.postOp {
        case .clip(let low, let high)?: postOps.append(.clip(low * outputScale, high * outputScale))
        case let p?: postOps.append(p)
        case nil: break
        }
        // One primitive of `source` → `destination` dims with `geometry`, per key (the whole convolution or a
        // rectangle); output channels are dimension 1 of the destination.
        let key = PrimitiveCache.Key("int8", x.shape, sum, configuration)
        func primitive(
            _ part: PrimitiveCache.Key, source: [Int], weights: [Int], destination: [Int],
            _ geometry: ConvolutionGeometry
        ) throws -> Primitive {
            try primitives.primitive(PrimitiveCache.Key(key, part)) {
                let op = try Int8Operations.convolution(
                    source: source, sourceType: q.inputType, weights: weights,
                    destination: destination, destinationType: next?.inputType,
                    geometry)
                let attributes = try PrimitiveAttributes(
                    postOps: postOps, outputScales: outputScales,
                    perChannelMask: 1 << 1)
                if dilatedOnBrgconv, geometry.dilation.contains(where: { $0 > 0 }) {
                    return try Primitive("int8 convolution", op: op, attributes: attributes) {
                        $0 == "jit:avx512_core_amx_int8"
                    }
                }
                if narrowPointwiseOffAMX, Self.isNarrowPointwise(unit.conv, quantizedOutput: next != nil) {
                    return try Primitive("int8 convolution", op: op, attributes: attributes) { $0.contains("amx") }
                }
                return try Primitive("int8 convolution", op: op, attributes: attributes)
            }
        }
        func quantizedInput(_ desc: MemoryDesc) throws -> Tensor {
            Int8Operations.holds(x, q.inputType)
                ? try x.reordered(to: desc)
                : try Int8Operations.quantize(x, into: desc, scale: inputScale)
        }
        // The outputs `rows` × `columns` (all by default) by exact Winograd, both tensors channels last; false
        // where it does not apply (see `Int8Winograd`).
        func byWinograd(
            _ input: Tensor, into output: Tensor, rows: Range<Int>? = nil,
            columns: Range<Int>? = nil
        ) throws -> Bool {
            guard let winograd, residual == nil, Int8Winograd.fits(unit, q) else { return false }
            return try winograd.compute(
                unit, q, input: input, into: output, scales: outputScales,
                activation: postOps.last, destination: next?.inputType,
                rows: rows, columns: columns)
        }

        if rectangles, residual == nil, let plan = PaddingFreeConvolution.plan(for: unit, inputShape: x.shape) {
            // The whole input and output channels last (the int8 kernels' layout); each rectangle reads a view of
            // the input (the all-taps one the input itself) and writes into a view of the output.
            let s = x.shape
            let rate = conv.window.dilation
            let input = try quantizedInput(Int8Operations.channelsLast(s, q.inputType))
            let output = try Tensor(desc: Int8Operations.channelsLast(conv.outputDims(s), next?.inputType))
            for r in plan.rows {
                for c in plan.columns {
                    // The all-taps centre by exact Winograd where its tiles are mostly outputs (ResNet-50's
                    // rate-12 centre, 40 × 40 on 64 × 64: 69 %, about 40 against 49 ms).
                    if r.taps == 0...2, c.taps == 0...2,
                        WinogradTiling.occupancy(
                            rows: r.outputs.count, columns: c.outputs.count,
                            dilation: rate) >= 0.6,
                        try byWinograd(input, into: output, rows: r.outputs, columns: c.outputs)
                    {
                        continue
                    }
                    let dims = PaddingFreeConvolution.rectangleDims(unit, s, r, c)
                    let rectangle = try primitive(
                        PrimitiveCache.Key(r, c), source: dims.source,
                        weights: dims.weights, destination: dims.destination,
                        PaddingFreeConvolution.rectangleGeometry(unit, r, c))
                    let (weights, bias) = try preparedWeights(unit, q, rectangle, taps: (r.taps, c.taps))
                    try PaddingFreeConvolution.execute(
                        rectangle, rows: r, columns: c, rate: rate, input: input,
                        output: output, weights: weights, bias: bias)
                }
            }
            return output
        }

        // After the rectangles: on ASPP's padding-heavy dilated convolutions Winograd's tiles would compute the
        // taps those skip, so only their all-taps centre takes it (above).
        if winograd != nil, residual == nil, Int8Winograd.fits(unit, q) {
            let input = try quantizedInput(Int8Operations.channelsLast(x.shape, q.inputType))
            let output = try Tensor(desc: Int8Operations.channelsLast(conv.outputDims(x.shape), next?.inputType))
            if try byWinograd(input, into: output) { return output }
        }

        let whole = try primitive(
            PrimitiveCache.Key("whole"), source: x.shape, weights: conv.weightDims,
            destination: conv.outputDims(x.shape), conv.geometry(x.shape))
        let input = try quantizedInput(whole.desc(.source))
        let (weights, bias) = try preparedWeights(unit, q, whole, taps: nil)
        let output: Tensor
        if let residual, let residualScale, next == nil {
            output = try Tensor(desc: whole.desc(.destination))
            try Int8Operations.dequantize(residual, into: output, scale: residualScale)
        } else {
            output = try fusedSumDestination(
                whole.desc(.destination), residual: residual,
                consumingResidual: consumingResidual)
        }
        try whole.execute([(Arg.src, input), (Arg.weights, weights), (Arg.bias, bias), (Arg.dst, output)])
        return output
    }

    /// The quantisations (the unit's and its output's) this unit has run with, each with its output scales
    /// 1/(input scale · weight scale[o]) · the output's scale; its index stands for it in primitive keys, so that
    /// a key is a few bytes, not the per-channel scales (what building, hashing and comparing keys of hundreds of
    /// scales cost was most of an int8 forward's overhead outside oneDNN). Compared by value: the unit passes the
    /// same arrays on every call, which `==` recognises by their storage.
    private var configurations: [(quantization: UnitQuantization, next: UnitQuantization?, outputScales: [Float])] = []

    /// The index and output scales of `q` with output quantisation `next` (see `configurations`); `inputScale` and
    /// `outputScale` are their effective scales, which they determine.
    private func configuration(
        _ q: UnitQuantization, next: UnitQuantization?, inputScale: Float, outputScale: Float
    ) -> (Int, [Float]) {
        if let index = configurations.firstIndex(where: { $0.quantization == q && $0.next == next }) {
            return (index, configurations[index].outputScales)
        }
        let outputScales = q.weightScales.map { outputScale / (inputScale * $0) }
        configurations.append((q, next, outputScales))
        return (configurations.count - 1, outputScales)
    }

    /// The s8 weights for `primitive` (the kernel's `taps` rows × columns, or all of it) and the bias pre-scaled
    /// into the accumulator's units, made once per parameter version and quantisation.
    private func preparedWeights(
        _ unit: ConvUnit, _ q: UnitQuantization, _ primitive: Primitive,
        taps: (rows: ClosedRange<Int>, columns: ClosedRange<Int>)?
    )
        throws -> (Tensor, Tensor)
    {
        let version = unit.parameterVersion
        if let p = preparedByPrimitive[ObjectIdentifier(primitive)], p.primitive === primitive, p.version == version,
            p.quantization == q
        {
            return (p.weights, p.bias)
        }
        let desc = primitive.desc(.weights)
        let key = PrimitiveCache.Key(desc, taps?.rows, taps?.columns)
        if let p = prepared[key], p.version == version, p.quantization == q {
            preparedByPrimitive[ObjectIdentifier(primitive)] = (primitive, version, q, p.weights, p.bias)
            return (p.weights, p.bias)
        }
        let (w, b) = unit.foldedPlainWeights()
        var plain = try Tensor(plain: unit.conv.weightDims, values: w)
        if let taps { plain = try plain.spatialView(rows: Range(taps.rows), columns: Range(taps.columns)) }
        let weights = try Int8Operations.quantizeWeights(plain, into: desc, scales: q.weightScales)
        let bias = try Tensor(plain: [unit.conv.outputChannels], values: Self.scaledBias(b, q))
        prepared[key] = (version, q, weights, bias)
        preparedByPrimitive[ObjectIdentifier(primitive)] = (primitive, version, q, weights, bias)
        return (weights, bias)
    }

    /// The folded bias `b` in the accumulator's units (input scale × weight scale), as oneDNN 2.6 adds it before
    /// the output scales.
    static func scaledBias(_ b: [Float], _ q: UnitQuantization) -> [Float] {
        let inputScale = effectiveInputScale(q)
        return zip(b, q.weightScales).map { $0 * inputScale * $1 }
    }

    // MARK: Training (never selected: `applies` is false in training mode)

    func trainingForward(_ unit: ConvUnit, _ x: Tensor) throws -> (output: Tensor, saved: SavedConvolution) {
        throw DeepLabError.invalidInput("\(unit.name): a quantised model infers only; train the f32 checkpoint")
    }

    func backward(
        _ unit: ConvUnit, _ dy: Tensor, saved: SavedConvolution,
        needsInputGradient: Bool
    ) throws -> Tensor? {
        throw DeepLabError.invalidBackward("\(unit.name): no backward through an int8 convolution")
    }
}
