import SliceLabSupport

/// MobileNetV2's feature extractor in torchvision's layout (`features.0` … `features.18`, here under the
/// DeepLab prefix as `backbone.0` … as torchvision's DeepLab-MobileNet wraps `features`), with strides
/// replaced by dilation from the stage that would exceed the output stride.
///
/// Reference: Sandler et al. 2018 (arXiv:1801.04381); torchvision `models.mobilenetv2`.
final class MobileNetV2 {
    /// (expansion t, channels c, repeats n, stride s), torchvision's `inverted_residual_setting`.
    static let settings = [
        (1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
        (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)
    ]

    /// Index of the feature whose output feeds the auxiliary head (the last block at stride 8).
    static let auxiliaryIndex = 6
    /// Index of the feature whose output is DeepLabV3+'s low-level input (the last block at stride 4, smp's
    /// `features[2]`).
    static let lowLevelIndex = 3

    let stem: ConvUnit
    let blocks: [InvertedResidual]
    let head: ConvUnit
    let lowLevelChannels: Int
    let auxiliaryChannels: Int
    let outputChannels: Int
    let keepsLowLevelFeatures: Bool

    /// torchvision's `_make_divisible`: round to a multiple of 8, never below 90 % of `value`.
    static func makeDivisible(_ value: Double, _ divisor: Int = 8) -> Int {
        var rounded = max(divisor, Int(value + Double(divisor) / 2) / divisor * divisor)
        if Double(rounded) < 0.9 * value { rounded += divisor }
        return rounded
    }

    /// - Parameter keepsLowLevelFeatures: forwards also return `features[lowLevelIndex]`'s output.
    init(
        prefix: String, inputChannels: Int, widthMultiplier: Double, outputStride: Int,
        keepsLowLevelFeatures: Bool = false, generator: inout SeededGenerator
    ) {
        self.keepsLowLevelFeatures = keepsLowLevelFeatures
        let p = prefix.isEmpty ? "" : prefix + "."
        var channels = MobileNetV2.makeDivisible(32 * widthMultiplier)
        stem = ConvUnit(
            p + "0.0", p + "0.1", inputChannels: inputChannels, outputChannels: channels, kernelSize: 3,
            stride: 2, padding: 1, activation: .relu6, generator: &generator)
        var currentStride = 2
        var dilation = 1
        var blocks: [InvertedResidual] = []
        var auxiliaryChannels = channels
        var lowLevelChannels = channels
        for (t, c, n, s) in MobileNetV2.settings {
            let output = MobileNetV2.makeDivisible(Double(c) * widthMultiplier)
            for i in 0..<n {
                var stride = i == 0 ? s : 1
                if stride > 1 && currentStride * stride > outputStride {
                    dilation *= stride
                    stride = 1
                } else {
                    currentStride *= stride
                }
                let index = blocks.count + 1
                blocks.append(
                    InvertedResidual(
                        prefix: "\(p)\(index)", inputChannels: channels, outputChannels: output,
                        stride: stride, dilation: dilation, expansion: t, generator: &generator))
                channels = output
                if index == MobileNetV2.auxiliaryIndex { auxiliaryChannels = output }
                if index == MobileNetV2.lowLevelIndex { lowLevelChannels = output }
            }
        }
        self.blocks = blocks
        let last = MobileNetV2.makeDivisible(1280 * max(1, widthMultiplier))
        head = ConvUnit(
            "\(p)\(blocks.count + 1).0", "\(p)\(blocks.count + 1).1", inputChannels: channels,
            outputChannels: last, kernelSize: 1, activation: .relu6, generator: &generator)
        self.auxiliaryChannels = auxiliaryChannels
        self.lowLevelChannels = lowLevelChannels
        outputChannels = last
    }

    var parameters: [Parameter] { stem.parameters + blocks.flatMap(\.parameters) + head.parameters }

    /// How eval mode computes the input's upscale, the stem and the first block in one pass where it takes them
    /// (float32; `FusedStem.fits`), nil for one by one: on wherever blocks fuse (`FusedStem.enabledInThisProcess`);
    /// tests set it.
    var stemFusion: FusedStem? = FusedStem.enabledInThisProcess ? FusedStem() : nil

    func callAsFunction(_ x: Tensor, training: Bool) throws -> BackboneFeatures {
        try self(x, upscaledTo: nil, training: training)
    }

    func callAsFunction(_ x: Tensor, upscaledTo size: (Int, Int)?, training: Bool) throws -> BackboneFeatures {
        let s = x.shape
        let upscaled = [s[0], s[1], size?.0 ?? s[2], size?.1 ?? s[3]]
        if !training, let stemFusion, let first = blocks.first, let fusion = first.fusion,
            FusedStem.fits(stem, first, fusion: fusion, stemOutput: stem.conv.outputDims(upscaled))
        {
            let y = try stemFusion(stem, first, fusion: fusion, x, upscaledTo: (upscaled[2], upscaled[3]))
            return try features(from: y, after: 1)
        }
        let input = try upscaledInput(x, to: size)
        return try features(from: stem(input, training: training), after: 0, training: training)
    }

    /// The features from `y`, the output of the stem and the first `done` blocks.
    private func features(from y: Tensor, after done: Int, training: Bool = false) throws -> BackboneFeatures {
        var y = y
        var features = BackboneFeatures(lowLevel: nil, auxiliary: y, out: y)
        for (i, block) in blocks.enumerated().dropFirst(done) {
            // A feature must survive the block that reads it.
            let readsFeature =
                i == MobileNetV2.auxiliaryIndex || (i == MobileNetV2.lowLevelIndex && keepsLowLevelFeatures)
            y = try block(y, inputIsConsumable: !readsFeature, training: training)
            if i + 1 == MobileNetV2.auxiliaryIndex { features.auxiliary = y }
            if i + 1 == MobileNetV2.lowLevelIndex, keepsLowLevelFeatures { features.lowLevel = y }
        }
        features.out = try head(y, training: training)
        return features
    }
}

/// torchvision's `InvertedResidual`: optional 1×1 expansion (ReLU6), 3×3 depthwise (ReLU6), 1×1 linear
/// projection, identity added when stride is 1 and channels match.
final class InvertedResidual {
    let units: [ConvUnit]
    let usesResidual: Bool
    /// The int8 quantisation the block's input is brought to once at its entry in eval mode (read by the first
    /// unit and the identity alike), nil for float32 (`DeepLabV3.apply(_:)`).
    var entryQuantization: UnitQuantization?
    /// torchvision's name of the block (`backbone.3`).
    let name: String
    /// How eval mode computes the block in one pass where it takes it (float32), nil for unit by unit: the effective
    /// ISA's `ConvolutionStrategyTable` entry decides (`FusedInvertedResidual.enabledInThisProcess`); tests set it.
    var fusion: FusedInvertedResidual? = FusedInvertedResidual.enabledInThisProcess ? FusedInvertedResidual() : nil
    /// The same for int8 blocks (`FusedInt8Block`: AVX-512 VNNI only, and off unless asked for).
    var int8Fusion: FusedInt8Block? = FusedInt8Block.enabledInThisProcess ? FusedInt8Block() : nil

    init(
        prefix: String, inputChannels: Int, outputChannels: Int, stride: Int, dilation: Int, expansion: Int,
        generator: inout SeededGenerator
    ) {
        name = prefix
        let p = prefix + ".conv."
        let hidden = Int((Double(inputChannels) * Double(expansion)).rounded())
        var units: [ConvUnit] = []
        if expansion != 1 {
            units.append(
                ConvUnit(
                    p + "0.0", p + "0.1", inputChannels: inputChannels, outputChannels: hidden,
                    kernelSize: 1, activation: .relu6, generator: &generator))
        }
        let d = units.count
        units.append(
            ConvUnit(
                "\(p)\(d).0", "\(p)\(d).1", inputChannels: hidden, outputChannels: hidden, kernelSize: 3,
                stride: stride, padding: dilation, dilation: dilation, groups: hidden,
                activation: .relu6, generator: &generator))
        units.append(
            ConvUnit(
                "\(p)\(d + 1)", "\(p)\(d + 2)", inputChannels: hidden, outputChannels: outputChannels,
                kernelSize: 1, activation: .none, generator: &generator))
        self.units = units
        usesResidual = stride == 1 && inputChannels == outputChannels
    }

    var parameters: [Parameter] { units.flatMap(\.parameters) }

    /// - Parameter inputIsConsumable: the caller no longer needs `x`, so eval mode may add into it in place.
    func callAsFunction(_ x: Tensor, inputIsConsumable: Bool = false, training: Bool) throws -> Tensor {
        if !training, let fusion, fusion.takes(self, inputShape: x.shape) { return try fusion(self, x) }
        var x = x
        var inputIsConsumable = inputIsConsumable
        if let quantized = try Int8Convolution.quantizedEntry(
            x, entryQuantization, training: training, name: name)
        {
            (x, inputIsConsumable) = (quantized, true)
        }
        if !training, let int8Fusion, FusedInt8Block.fits(self) { return try int8Fusion(self, x) }
        var y = x
        for unit in units.dropLast() { y = try unit(y, training: training) }
        guard let last = units.last else { return y }
        return try last(y, residual: usesResidual ? x : nil, consumingResidual: inputIsConsumable, training: training)
    }
}

// MARK: - Backward

extension InvertedResidual {
    func backward(_ dy: Tensor) throws -> Tensor {
        guard let last = units.last else { return dy }
        let (mainInput, identity) = try last.backward(dy)
        var gradient = mainInput
        for unit in units.dropLast().reversed() {
            guard let g = gradient else { break }
            gradient = try unit.backward(g).input
        }
        guard let result = try addGradients([gradient, identity]) else {
            throw DeepLabError.invalidBackward("inverted residual produced no input gradient")
        }
        return result
    }
}

extension MobileNetV2 {
    func backward(
        out dOut: Tensor, auxiliary dAuxiliary: Tensor?, lowLevel dLowLevel: Tensor?, gradientsReady: GradientsReady
    ) throws {
        guard var gradient = try head.backward(dOut).input else {
            throw DeepLabError.invalidBackward("MobileNetV2 head produced no input gradient")
        }
        gradientsReady(head.parameters)
        for (i, block) in blocks.enumerated().reversed() {
            if i + 1 == MobileNetV2.auxiliaryIndex, let dAuxiliary {
                gradient = try Operations.sum([gradient, dAuxiliary])
            }
            if i + 1 == MobileNetV2.lowLevelIndex, let dLowLevel {
                gradient = try Operations.sum([gradient, dLowLevel])
            }
            gradient = try block.backward(gradient)
            gradientsReady(block.parameters)
        }
        _ = try stem.backward(gradient, needsInputGradient: false)
        gradientsReady(stem.parameters)
    }
}

// MARK: - The registry's facts

extension MobileNetV2 {
    /// What SliceLab knows of DeepLabV3 over MobileNetV2 before one is built; its training memory is not
    /// measured and is taken as ResNet-18's (5.3 kB per input pixel at output stride 8).
    static let traits = BackboneTraits(
        trainingBytesPerPixel: 5_300,
        torchvision: .none(
            reason: "torchvision has no DeepLabV3 over MobileNetV2 (only MobileNetV3-Large); SliceLab's "
                + "composition would not load into any torchvision constructor; export to ONNX instead"),
        make: { configuration, generator in
            MobileNetV2(
                prefix: String(configuration.backbonePrefix.dropLast()), inputChannels: configuration.inputChannels,
                widthMultiplier: configuration.widthMultiplier, outputStride: configuration.outputStride,
                keepsLowLevelFeatures: configuration.decoder == .v3plus, generator: &generator)
        })
}

// MARK: - Quantisation

extension MobileNetV2 {
    var convUnits: [ConvUnit] { [stem] + blocks.flatMap(\.units) + [head] }

    /// Each block's units, and the last block's last unit with `head`, which alone reads that block's output (when
    /// the block adds no identity).
    var unitChains: [[ConvUnit]] {
        guard let last = blocks.last, !last.usesResidual, let output = last.units.last else {
            return blocks.map(\.units)
        }
        return blocks.map(\.units) + [[output, head]]
    }

    var unitFeedingFirstBlock: ConvUnit? { stem }

    var unitFeedingHead: ConvUnit? { head }

    /// The block before `auxiliaryIndex` gives the auxiliary feature, the one before `lowLevelIndex` the
    /// low-level one when kept (their outputs stay f32); the last one feeds `head` (a chain, `unitChains`).
    var quantizableBlocks: (blocks: [any QuantizableBlock], featureOutputs: Set<Int>) {
        let lowLevel: Set = keepsLowLevelFeatures ? [MobileNetV2.lowLevelIndex - 1] : []
        return (blocks, lowLevel.union([MobileNetV2.auxiliaryIndex - 1, blocks.count - 1]))
    }
}

// MARK: - The inference graph

extension MobileNetV2 {
    /// The stem, the inverted residual blocks and the 1×1 head; returns `features[lowLevelIndex]`'s and the
    /// head's outputs.
    func describe(_ x: String, in graph: inout InferenceGraph) -> (lowLevel: String, out: String) {
        var y = stem.describe(x, in: &graph)
        var lowLevel = y
        for (i, block) in blocks.enumerated() {
            var z = y
            for unit in block.units.dropLast() { z = unit.describe(z, in: &graph) }
            y = block.units.last?.describe(z, residual: block.usesResidual ? y : nil, in: &graph) ?? z
            if i + 1 == MobileNetV2.lowLevelIndex { lowLevel = y }
        }
        return (lowLevel, head.describe(y, in: &graph))
    }
}
