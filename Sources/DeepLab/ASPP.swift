import SliceLabSupport

/// Atrous spatial pyramid pooling as torchvision's `ASPP`: a 1×1 branch, one 3×3 atrous branch per rate, an
/// image-level branch (global average pool, 1×1, BN, ReLU, bilinear back to the feature size), concatenated
/// and projected by 1×1 + BN + ReLU + dropout(0.5). Separable (smp's `ASPPSeparableConv`, DeepLabV3+), each
/// atrous branch is a depthwise 3×3 then a 1×1 with BN and ReLU.
///
/// Reference: Chen et al. 2017, "Rethinking Atrous Convolution" (arXiv:1706.05587), §3.3; Chen et al. 2018
/// (arXiv:1802.02611), §3.2.
final class ASPP {
    /// Each branch's units in order (one, or the depthwise and pointwise of a separable branch).
    let branches: [[ConvUnit]]
    let pooling: ConvUnit
    let projection: ConvUnit
    let dropout: Dropout
    /// The int8 quantisation the branches' shared input is brought to once in eval mode, nil for float32 or
    /// when the branches' input scales differ (`DeepLabV3.apply(_:)`).
    var entryQuantization: UnitQuantization?

    init(
        prefix: String, inputChannels: Int, atrousRates: [Int], outputChannels: Int, separable: Bool = false,
        generator: inout SeededGenerator
    ) {
        let p = prefix + "."
        var branches = [
            [
                ConvUnit(
                    p + "convs.0.0", p + "convs.0.1", inputChannels: inputChannels,
                    outputChannels: outputChannels, kernelSize: 1, activation: .relu, generator: &generator)
            ]
        ]
        for (i, rate) in atrousRates.enumerated() {
            let name = "\(p)convs.\(i + 1)"
            branches.append(
                separable
                    ? separableConvolution(
                        name + ".0", norm: name + ".1", inputChannels: inputChannels, outputChannels: outputChannels,
                        dilation: rate, generator: &generator)
                    : [
                        ConvUnit(
                            name + ".0", name + ".1", inputChannels: inputChannels, outputChannels: outputChannels,
                            kernelSize: 3, padding: rate, dilation: rate, activation: .relu, generator: &generator)
                    ])
        }
        let n = atrousRates.count + 1
        pooling = ConvUnit(
            "\(p)convs.\(n).1", "\(p)convs.\(n).2", inputChannels: inputChannels,
            outputChannels: outputChannels, kernelSize: 1, activation: .relu, generator: &generator)
        projection = ConvUnit(
            p + "project.0", p + "project.1", inputChannels: (n + 1) * outputChannels,
            outputChannels: outputChannels, kernelSize: 1, activation: .relu, generator: &generator)
        dropout = Dropout(probability: 0.5, seed: generator.next())
        self.branches = branches
    }

    /// Every unit in forward order.
    var units: [ConvUnit] { Array(branches.joined()) + [pooling, projection] }

    var parameters: [Parameter] { units.flatMap(\.parameters) }

    /// What backward needs from the last training forward.
    struct State {
        let inputShape: [Int]
        let pooled: PoolingResult
        let poolingOutputShape: [Int]
        let resize: Primitive
        let projectionOutput: MemoryDesc
    }

    private(set) var state: State?

    func callAsFunction(_ x: Tensor, training: Bool) throws -> Tensor {
        let s = x.shape
        // int8: the branches read one quantised copy of the input and write u8 at the projection's input scale,
        // so the concatenation is of 8-bit values; the image-pooling branch (f32) is quantised after resizing.
        let branchInput =
            try Int8Convolution.quantizedEntry(
                x, entryQuantization, training: training, name: "ASPP") ?? x
        var outputs = try branches.map { try forwardChain($0, branchInput, training: training) }
        // A quantised input (the backbone wrote it for the branches) is averaged as integers and dequantised.
        var pooled: PoolingResult?
        let mean = try LayerProfiling.operation("image pooling", "pool", bytes: { _ in x.desc.byteCount }) {
            if let q = entryQuantization, Int8Operations.isQuantized(x) {
                return try Int8Operations.globalAveragePool(x, scale: Int8Convolution.effectiveInputScale(q))
            }
            let result = try Operations.globalAveragePool(x, training: training)
            pooled = result
            return result.output
        }
        let y = try pooling(mean, training: training)
        var (resized, resize) = try Operations.resizeBilinear(y, height: s[2], width: s[3], training: training)
        if !training, let q = branches.first?.last?.quantizedOutput, Int8Operations.isQuantized(outputs[0]) {
            resized = try Int8Operations.quantize(
                resized, into: outputs[0].desc,
                scale: Int8Convolution.effectiveInputScale(q))
        }
        outputs.append(resized)
        let target = outputs[0].desc
        let joined = try LayerProfiling.operation("ASPP concatenation", "concat", bytes: { 2 * $0.desc.byteCount }) {
            try Operations.concatenate(outputs.map { try $0.reordered(to: target) })
        }
        let projected = try projection(joined, training: training)
        state =
            training
            ? pooled.map {
                State(
                    inputShape: s, pooled: $0, poolingOutputShape: y.shape, resize: resize,
                    projectionOutput: projected.desc)
            } : nil
        return try dropout(projected, training: training)
    }
}

/// Dropout scaled by 1/(1−p) in training, the identity in eval. Its masks are counter-based: the mask of a
/// training forward is drawn from a generator keyed by the layer's seed and the training step alone, so a run
/// resumed at step s draws the masks the uninterrupted run drew there (no generator state to save).
final class Dropout {
    let probability: Float
    /// The layer's key (drawn from the model's seed at construction).
    let seed: UInt64
    /// The step whose mask the next training forward draws; each training forward advances it by one, and
    /// `DeepLabV3.keyRandomDraws(toStep:)` sets it.
    var step: UInt64 = 0
    private(set) var mask: [Float] = []
    /// False switches dropout off in training too (gradient checks need a deterministic forward).
    var isEnabled = true

    init(probability: Float, seed: UInt64) {
        self.probability = probability
        self.seed = seed
    }

    /// The generator of `step`'s mask: seeded with the layer's seed mixed with the first draw of a generator
    /// seeded with the step, so every (seed, step) pair starts an independent stream.
    static func generator(seed: UInt64, step: UInt64) -> SeededGenerator {
        var stepMixer = SeededGenerator(seed: step)
        return SeededGenerator(seed: seed ^ stepMixer.next())
    }

    /// The global indices of the samples of the next training forward's batch: when set (one per sample), each
    /// sample's mask is drawn, in NCHW order, from a generator keyed by the layer's seed and the sample's index
    /// alone, so a data-parallel job's ranks draw the masks one process draws. Each forward consumes them.
    var sampleKeys: [Int]?

    /// Works on the tensor's storage in whatever layout it has: the mask is per stored element (or, keyed by
    /// samples, per logical element, reordered into the tensor's layout).
    func callAsFunction(_ x: Tensor, training: Bool) throws -> Tensor {
        let keys = sampleKeys
        sampleKeys = nil
        guard training, probability > 0, isEnabled else {
            mask = []
            return x
        }
        let keep = 1 / (1 - probability)
        let dropBelow = Double(probability)
        if let keys, keys.count == x.shape[0] {
            let perSample = x.shape.dropFirst().reduce(1, *)
            var plain = [Float](repeating: 0, count: perSample * keys.count)
            for (n, key) in keys.enumerated() {
                var generator = Self.generator(seed: seed, step: UInt64(max(0, key)) | (1 << 63))
                for i in 0..<perSample {
                    plain[n * perSample + i] = Double(generator.next() >> 11) * 0x1p-53 < dropBelow ? 0 : keep
                }
            }
            mask = try Tensor(plain: x.shape, values: plain).reordered(to: x.desc).withStorage { Array($0) }
        } else {
            var generator = Self.generator(seed: seed, step: step)
            mask = x.withStorage { source in
                (0..<source.count).map { _ in Double(generator.next() >> 11) * 0x1p-53 < dropBelow ? 0 : keep }
            }
        }
        step &+= 1
        let output = try Tensor(desc: x.desc)
        x.withStorage { source in
            output.withStorage { target in
                mask.withUnsafeBufferPointer { mask in
                    for i in 0..<min(source.count, mask.count) { target[i] = source[i] * mask[i] }
                }
            }
        }
        return output
    }
}

/// A chain of units applied in order; in eval mode a separable convolution in one pass where its depthwise unit's
/// `separableFusion` takes it.
func forwardChain(_ units: [ConvUnit], _ x: Tensor, training: Bool) throws -> Tensor {
    if !training, units.count == 2, let fusion = units[0].separableFusion {
        let separable = SeparableConvolution(units: units)
        if fusion.takes(separable, inputShape: x.shape) { return try fusion(separable, x) }
    }
    return try units.reduce(x) { try $1($0, training: training) }
}

/// The backward of `forwardChain`: dLoss/dInput from dLoss/dOutput.
func backwardChain(_ units: [ConvUnit], _ dy: Tensor) throws -> Tensor {
    try units.reversed().reduce(dy) { g, unit in
        guard let input = try unit.backward(g).input else {
            throw DeepLabError.invalidBackward("\(unit.name) produced no input gradient")
        }
        return input
    }
}

/// smp's `SeparableConv2d` (depthwise 3 × 3 named `name.0`, no bias, then 1 × 1 named `name.1`) followed by batch
/// norm `norm` and ReLU, as DeepLabV3+ uses it; fused in eval mode where `FusedInvertedResidual` would fuse an
/// inverted-residual block (`SeparableConvolution.fusedInThisProcess`).
func separableConvolution(
    _ name: String, norm: String, inputChannels: Int, outputChannels: Int, dilation: Int = 1,
    generator: inout SeededGenerator
) -> [ConvUnit] {
    let depthwise = ConvUnit(
        name + ".0", nil, inputChannels: inputChannels, outputChannels: inputChannels, kernelSize: 3,
        padding: dilation, dilation: dilation, groups: inputChannels, activation: .none, generator: &generator)
    depthwise.separableFusion = SeparableConvolution.fusedInThisProcess ? FusedInvertedResidual() : nil
    return [
        depthwise,
        ConvUnit(
            name + ".1", norm, inputChannels: inputChannels, outputChannels: outputChannels, kernelSize: 1,
            activation: .relu, generator: &generator)
    ]
}

/// The head on the backbone's features.
///
/// DeepLabV3 (torchvision's `DeepLabHead`): ASPP (`classifier.0`), 3×3 conv 256 + BN + ReLU (`classifier.1`/`.2`),
/// and the 1×1 classifier with bias (`classifier.4`); logits at the output stride.
///
/// DeepLabV3+ (smp's `DeepLabV3PlusDecoder` and `SegmentationHead`): separable ASPP (`decoder.aspp.0`), a separable
/// 3×3 + BN + ReLU (`decoder.aspp.1`/`.2`), resized (aligned corners) to the stride-4 features, which a 1×1 + BN +
/// ReLU brings to 48 channels (`decoder.block1`); both concatenated, a separable 3×3 + BN + ReLU
/// (`decoder.block2`), and the 1×1 classifier with bias (`segmentation_head.0`); logits at stride 4.
final class DeepLabHead {
    let aspp: ASPP
    /// The 3×3 after ASPP (DeepLabV3), or its depthwise and pointwise units (DeepLabV3+).
    let refine: [ConvUnit]
    /// DeepLabV3+'s low-level path, nil for DeepLabV3.
    let fusion: LowLevelFusion?
    let classifier: ConvUnit

    init(
        _ decoder: DeepLabConfiguration.Decoder, inputChannels: Int, lowLevelChannels: Int, classCount: Int,
        atrousRates: [Int], channels: Int, generator: inout SeededGenerator
    ) {
        switch decoder {
        case .v3:
            aspp = ASPP(
                prefix: "classifier.0", inputChannels: inputChannels, atrousRates: atrousRates,
                outputChannels: channels, generator: &generator)
            refine = [
                ConvUnit(
                    "classifier.1", "classifier.2", inputChannels: channels, outputChannels: channels, kernelSize: 3,
                    padding: 1, activation: .relu, generator: &generator)
            ]
            fusion = nil
            classifier = ConvUnit(
                "classifier.4", nil, inputChannels: channels, outputChannels: classCount, kernelSize: 1,
                bias: true, activation: .none, generator: &generator)
        case .v3plus:
            aspp = ASPP(
                prefix: "decoder.aspp.0", inputChannels: inputChannels, atrousRates: atrousRates,
                outputChannels: channels, separable: true, generator: &generator)
            refine = separableConvolution(
                "decoder.aspp.1", norm: "decoder.aspp.2", inputChannels: channels, outputChannels: channels,
                generator: &generator)
            fusion = LowLevelFusion(lowLevelChannels: lowLevelChannels, channels: channels, generator: &generator)
            classifier = ConvUnit(
                "segmentation_head.0", nil, inputChannels: channels, outputChannels: classCount, kernelSize: 1,
                bias: true, activation: .none, generator: &generator)
        }
    }

    /// Every unit in forward order.
    var units: [ConvUnit] { aspp.units + refine + (fusion?.units ?? []) + [classifier] }

    /// Sequences of units in which each unit's output feeds the next unit alone (separable convolutions' depthwise
    /// and pointwise halves).
    var unitChains: [[ConvUnit]] { aspp.branches + [refine] + (fusion.map { [$0.fuse] } ?? []) }

    var parameters: [Parameter] { units.flatMap(\.parameters) }

    func callAsFunction(_ features: BackboneFeatures, training: Bool) throws -> Tensor {
        var y = try forwardChain(refine, aspp(features.out, training: training), training: training)
        if let fusion {
            guard let lowLevel = features.lowLevel else {
                throw DeepLabError.invalidInput("the DeepLabV3+ decoder needs the backbone's stride-4 features")
            }
            y = try fusion(y, lowLevel: lowLevel, training: training)
        }
        return try classifier(y, training: training)
    }
}

/// DeepLabV3+'s join of the stride-4 features (smp's `block1`, `up`, `block2`): the ASPP output resized to the
/// low-level features' size with aligned corners (smp's ×4 `nn.Upsample` when the input divides by the output
/// stride, any size otherwise), the low-level features projected to 48 channels, concatenated and fused by a
/// separable 3×3.
final class LowLevelFusion {
    /// Channels the low-level features are projected to (the paper's 48).
    static let projectedChannels = 48

    let projection: ConvUnit
    let fuse: [ConvUnit]
    /// The shape of the last training forward's ASPP output (the resize's source).
    private var resizedShape: [Int]?

    init(lowLevelChannels: Int, channels: Int, generator: inout SeededGenerator) {
        projection = ConvUnit(
            "decoder.block1.0", "decoder.block1.1", inputChannels: lowLevelChannels,
            outputChannels: Self.projectedChannels, kernelSize: 1, activation: .relu, generator: &generator)
        fuse = separableConvolution(
            "decoder.block2.0", norm: "decoder.block2.1", inputChannels: channels + Self.projectedChannels,
            outputChannels: channels, generator: &generator)
    }

    var units: [ConvUnit] { [projection] + fuse }

    func callAsFunction(_ x: Tensor, lowLevel: Tensor, training: Bool) throws -> Tensor {
        resizedShape = training ? x.shape : nil
        // An int8 model's fusion reads the join in u8: it is written so.
        let entry = training ? nil : fuse.first?.quantization.flatMap { $0.inputType == .u8 ? $0 : nil }
        let projected = try projection(lowLevel, training: training)
        let joined = try LayerProfiling.operation(
            "decoder join", "join", bytes: { x.desc.byteCount + projected.desc.byteCount + $0.desc.byteCount }
        ) {
            try Operations.resizeAlignedCorners(
                x, joining: projected, quantizedWith: entry.map(Int8Convolution.effectiveInputScale))
        }
        return try forwardChain(fuse, joined, training: training)
    }

    /// dLoss/d(ASPP output) and dLoss/d(low-level features) from dLoss/dOutput.
    func backward(_ dy: Tensor) throws -> (aspp: Tensor, lowLevel: Tensor) {
        guard let resizedShape else { throw DeepLabError.invalidBackward("no training-mode forward of the decoder") }
        let joined = try backwardChain(fuse, dy)
        let parts = try Operations.split(joined, channels: [resizedShape[1], Self.projectedChannels])
        let aspp = try Operations.resizeAlignedCornersBackward(parts[0], sourceShape: resizedShape)
        return (aspp, try backwardChain([projection], parts[1]))
    }
}

/// torchvision's `FCNHead` as the auxiliary classifier: 3×3 conv to C/4 + BN + ReLU, dropout(0.1),
/// 1×1 classifier with bias (`aux_classifier.0`, `.1`, `.4`).
final class FCNHead {
    let body: ConvUnit
    let dropout: Dropout
    let classifier: ConvUnit

    init(prefix: String, inputChannels: Int, classCount: Int, generator: inout SeededGenerator) {
        let p = prefix + "."
        let inner = inputChannels / 4
        body = ConvUnit(
            p + "0", p + "1", inputChannels: inputChannels, outputChannels: inner, kernelSize: 3,
            padding: 1, activation: .relu, generator: &generator)
        dropout = Dropout(probability: 0.1, seed: generator.next())
        classifier = ConvUnit(
            p + "4", nil, inputChannels: inner, outputChannels: classCount, kernelSize: 1,
            bias: true, activation: .none, generator: &generator)
    }

    var parameters: [Parameter] { body.parameters + classifier.parameters }

    func callAsFunction(_ x: Tensor, training: Bool) throws -> Tensor {
        try classifier(dropout(body(x, training: training), training: training), training: training)
    }
}

// MARK: - Backward

extension Dropout {
    /// dLoss/dInput = dLoss/dOutput × mask (the identity when the last forward had no dropout).
    func backward(_ dy: Tensor, outputDesc: MemoryDesc) throws -> Tensor {
        guard !mask.isEmpty else { return dy }
        let g = try dy.reordered(to: outputDesc)
        let output = try Tensor(desc: outputDesc)
        g.withStorage { source in
            output.withStorage { target in
                for i in 0..<min(mask.count, source.count) { target[i] = source[i] * mask[i] }
            }
        }
        return output
    }
}

extension ASPP {
    func backward(_ dy: Tensor) throws -> Tensor {
        guard let state else { throw DeepLabError.invalidBackward("no training-mode forward of ASPP") }
        let g = try dropout.backward(dy, outputDesc: state.projectionOutput)
        guard let dJoined = try projection.backward(g).input else {
            throw DeepLabError.invalidBackward("ASPP projection produced no input gradient")
        }
        let parts = try Operations.split(
            dJoined,
            channels: [Int](
                repeating: projection.conv.inputChannels / (branches.count + 1),
                count: branches.count + 1))
        var gradients: [Tensor?] = []
        for (branch, part) in zip(branches, parts) { gradients.append(try backwardChain(branch, part)) }
        let pooledGradient = try Operations.resizeBackward(
            parts[branches.count], forward: state.resize,
            sourceShape: state.poolingOutputShape)
        if let g = try pooling.backward(pooledGradient).input {
            gradients.append(try Operations.poolingBackward(g, forward: state.pooled, sourceShape: state.inputShape))
        }
        guard let result = try addGradients(gradients) else {
            throw DeepLabError.invalidBackward("ASPP produced no input gradient")
        }
        return result
    }
}

extension DeepLabHead {
    /// dLoss/d(main features) and, for DeepLabV3+, dLoss/d(low-level features) from dLoss/dLogits.
    func backward(_ dy: Tensor) throws -> (out: Tensor, lowLevel: Tensor?) {
        var g = try backwardChain([classifier], dy)
        var lowLevel: Tensor?
        if let fusion { (g, lowLevel) = try fusion.backward(g) }
        return (try aspp.backward(backwardChain(refine, g)), lowLevel)
    }
}

extension FCNHead {
    func backward(_ dy: Tensor) throws -> Tensor {
        guard let g1 = try classifier.backward(dy).input, let bodyOutput = body.saved?.output else {
            throw DeepLabError.invalidBackward("FCN head produced no input gradient")
        }
        let g2 = try dropout.backward(g1, outputDesc: bodyOutput.desc)
        guard let g3 = try body.backward(g2).input else {
            throw DeepLabError.invalidBackward("FCN head produced no input gradient")
        }
        return g3
    }
}
