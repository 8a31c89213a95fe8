import SliceLabSupport

/// A ResNet backbone in torchvision's module layout (`conv1`, `bn1`, `layer1`…`layer4`), with strides replaced
/// by dilation in the last stage(s) for DeepLab's output stride.
///
/// Reference: He et al. 2016 (arXiv:1512.03385); torchvision `models.resnet`.
final class ResNet {
    /// Depth, with its block type and block counts per stage.
    enum Depth: String, Codable, CaseIterable {
        case resNet18, resNet34, resNet50, resNet101

        var blockCounts: [Int] {
            switch self {
            case .resNet18: return [2, 2, 2, 2]
            case .resNet34, .resNet50: return [3, 4, 6, 3]
            case .resNet101: return [3, 4, 23, 3]
            }
        }

        var usesBottleneck: Bool { self == .resNet50 || self == .resNet101 }
        var expansion: Int { usesBottleneck ? 4 : 1 }
    }

    let stem: ConvUnit
    let stages: [[ResidualBlock]]
    let depth: Depth
    let keepsLowLevelFeatures: Bool

    /// Channels of layer1's, layer3's and layer4's outputs.
    var lowLevelChannels: Int { 64 * depth.expansion }
    var auxiliaryChannels: Int { 256 * depth.expansion }
    var outputChannels: Int { 512 * depth.expansion }

    /// - Parameters:
    ///   - prefix: the state_dict prefix ("backbone").
    ///   - outputStride: 8 (layer3 and layer4 dilated) or 16 (layer4 dilated).
    ///   - multiGrid: layer4's per-block dilation multipliers (Chen et al. 2017, §3.2), or nil.
    ///   - dilatesWholeStage: every block of a dilated stage takes its dilation (smp's `make_dilated`); false
    ///     keeps the previous dilation in the first block (torchvision's `replace_stride_with_dilation`).
    ///   - keepsLowLevelFeatures: forwards also return layer1's output.
    init(
        prefix: String, depth: Depth, inputChannels: Int, outputStride: Int, multiGrid: [Int]?,
        dilatesWholeStage: Bool = false, keepsLowLevelFeatures: Bool = false, generator: inout SeededGenerator
    ) {
        self.depth = depth
        self.keepsLowLevelFeatures = keepsLowLevelFeatures
        let p = prefix.isEmpty ? "" : prefix + "."
        stem = ConvUnit(
            p + "conv1", p + "bn1", inputChannels: inputChannels, outputChannels: 64, kernelSize: 7,
            stride: 2, padding: 3, activation: .relu, generator: &generator)
        let replaceStride = [false, outputStride <= 8, outputStride <= 16]
        var inplanes = 64
        var dilation = 1
        var stages: [[ResidualBlock]] = []
        for (index, planes) in [64, 128, 256, 512].enumerated() {
            var stride = index == 0 ? 1 : 2
            let previousDilation = dilation
            if index > 0, replaceStride[index - 1] {
                dilation *= stride
                stride = 1
            }
            var blocks: [ResidualBlock] = []
            for b in 0..<depth.blockCounts[index] {
                var blockDilation = b == 0 && !dilatesWholeStage ? previousDilation : dilation
                if index == 3, let grid = multiGrid, !grid.isEmpty { blockDilation = dilation * grid[b % grid.count] }
                blocks.append(
                    ResidualBlock(
                        prefix: "\(p)layer\(index + 1).\(b)", bottleneck: depth.usesBottleneck, inplanes: inplanes,
                        planes: planes, stride: b == 0 ? stride : 1, dilation: blockDilation,
                        downsample: b == 0 && (stride != 1 || inplanes != planes * depth.expansion),
                        generator: &generator))
                inplanes = planes * depth.expansion
            }
            stages.append(blocks)
        }
        self.stages = stages
    }

    var parameters: [Parameter] { stem.parameters + stages.flatMap { $0.flatMap(\.parameters) } }

    private(set) var pooling: PoolingResult?

    /// layer1's (when kept), layer3's and layer4's features for input x [N, C, H, W].
    func callAsFunction(_ x: Tensor, training: Bool) throws -> BackboneFeatures {
        var y = try stem(x, training: training)
        let pooled = try Operations.maxPool(y, Window(kernel: 3, stride: 2, padding: 1), training: training)
        pooling = training ? pooled : nil
        y = pooled.output
        var features = BackboneFeatures(lowLevel: nil, auxiliary: y, out: y)
        for (index, stage) in stages.enumerated() {
            for (b, block) in stage.enumerated() {
                // layer1's and layer3's outputs are also features: the block reading one must not overwrite it.
                let readsFeature = b == 0 && (index == 3 || (index == 1 && keepsLowLevelFeatures))
                y = try block(y, inputIsConsumable: !readsFeature, training: training)
            }
            if index == 0, keepsLowLevelFeatures { features.lowLevel = y }
            if index == 2 { features.auxiliary = y }
        }
        features.out = y
        return features
    }
}

/// torchvision's `BasicBlock` (two 3×3) or `Bottleneck` (1×1, 3×3, 1×1 with expansion 4), with an optional
/// 1×1 downsample on the identity path. Dilation applies to every 3×3 convolution of the block (torchvision's
/// BasicBlock refuses dilation; SliceLab's fixture generator patches it the same way).
final class ResidualBlock {
    let units: [ConvUnit]
    let downsample: ConvUnit?
    /// The int8 quantisation the block's input is brought to once at its entry in eval mode (read by the first
    /// unit, the downsample and the identity alike), nil for float32 (`DeepLabV3.apply(_:)`).
    var entryQuantization: UnitQuantization?

    init(
        prefix: String, bottleneck: Bool, inplanes: Int, planes: Int, stride: Int, dilation: Int,
        downsample hasDownsample: Bool, generator: inout SeededGenerator
    ) {
        let p = prefix + "."
        if bottleneck {
            units = [
                ConvUnit(
                    p + "conv1", p + "bn1", inputChannels: inplanes, outputChannels: planes, kernelSize: 1,
                    activation: .relu, generator: &generator),
                ConvUnit(
                    p + "conv2", p + "bn2", inputChannels: planes, outputChannels: planes, kernelSize: 3,
                    stride: stride, padding: dilation, dilation: dilation, activation: .relu,
                    generator: &generator),
                ConvUnit(
                    p + "conv3", p + "bn3", inputChannels: planes, outputChannels: planes * 4, kernelSize: 1,
                    activation: .relu, generator: &generator)
            ]
        } else {
            units = [
                ConvUnit(
                    p + "conv1", p + "bn1", inputChannels: inplanes, outputChannels: planes, kernelSize: 3,
                    stride: stride, padding: dilation, dilation: dilation, activation: .relu,
                    generator: &generator),
                ConvUnit(
                    p + "conv2", p + "bn2", inputChannels: planes, outputChannels: planes, kernelSize: 3,
                    padding: dilation, dilation: dilation, activation: .relu, generator: &generator)
            ]
        }
        let outputs = planes * (bottleneck ? 4 : 1)
        downsample =
            hasDownsample
            ? ConvUnit(
                p + "downsample.0", p + "downsample.1", inputChannels: inplanes, outputChannels: outputs,
                kernelSize: 1, stride: stride, activation: .none, generator: &generator)
            : nil
        // torchvision zero-initialises nothing by default; the last BN starts at γ = 1 like the others.
    }

    var parameters: [Parameter] {
        units.flatMap(\.parameters) + (downsample?.parameters ?? [])
    }

    /// - Parameter inputIsConsumable: the caller no longer needs `x`, so eval mode may add into it in place.
    func callAsFunction(_ x: Tensor, inputIsConsumable: Bool = false, training: Bool) throws -> Tensor {
        var x = x
        var inputIsConsumable = inputIsConsumable
        if let quantized = try Int8Convolution.quantizedEntry(
            x, entryQuantization, training: training, name: units.first?.name ?? "block")
        {
            (x, inputIsConsumable) = (quantized, true)
        }
        let identity = try downsample.map { try $0(x, training: training) } ?? x
        var y = x
        for unit in units.dropLast() { y = try unit(y, training: training) }
        guard let last = units.last else { return y }
        return try last(
            y, residual: identity, consumingResidual: downsample != nil || inputIsConsumable,
            training: training)
    }
}

// MARK: - Backward

extension ResidualBlock {
    /// dLoss/dInput from dLoss/dOutput.
    func backward(_ dy: Tensor) throws -> Tensor {
        guard let last = units.last else { return dy }
        let (mainInput, identityGradient) = try last.backward(dy)
        var gradient = mainInput
        for unit in units.dropLast().reversed() {
            guard let g = gradient else { break }
            gradient = try unit.backward(g).input
        }
        var identity = identityGradient
        if let downsample, let g = identityGradient { identity = try downsample.backward(g).input }
        guard let result = try addGradients([gradient, identity]) else {
            throw DeepLabError.invalidBackward("residual block produced no input gradient")
        }
        return result
    }
}

extension ResNet {
    /// Backpropagates the gradients of layer4's output and (optionally) layer3's and layer1's, down to the stem's
    /// weights, reporting each block's parameters as they complete.
    func backward(
        out dOut: Tensor, auxiliary dAuxiliary: Tensor?, lowLevel dLowLevel: Tensor?, gradientsReady: GradientsReady
    ) throws {
        guard let pooling else { throw DeepLabError.invalidBackward("no training-mode forward of the ResNet") }
        var gradient = dOut
        for (index, stage) in stages.enumerated().reversed() {
            if index == 2, let dAuxiliary { gradient = try Operations.sum([gradient, dAuxiliary]) }
            if index == 0, let dLowLevel { gradient = try Operations.sum([gradient, dLowLevel]) }
            for block in stage.reversed() {
                gradient = try block.backward(gradient)
                gradientsReady(block.parameters)
            }
        }
        guard let stemOutput = stem.saved?.output else {
            throw DeepLabError.invalidBackward("no training-mode forward of the stem")
        }
        gradient = try Operations.poolingBackward(gradient, forward: pooling, sourceShape: stemOutput.shape)
        _ = try stem.backward(gradient, needsInputGradient: false)
        gradientsReady(stem.parameters)
    }
}

// MARK: - The registry's facts

extension ResNet {
    /// What SliceLab knows of DeepLabV3 over ResNet of `depth` before one is built. The training memory per
    /// input pixel at output stride 8 comes from the training-step benchmark's peak RSS (`Benchmarks/README.md`):
    /// ResNet-18 692 MB at 8 × 128² (5.3 kB per pixel), ResNet-50 2316 MB at 4 × 256² (8.8 kB); ResNet-34 and
    /// ResNet-101 are not measured and are scaled by depth (6.5 kB, 11 kB).
    static func traits(_ depth: Depth) -> BackboneTraits {
        let name = depth.rawValue.lowercased()
        let bytesPerPixel: Double
        switch depth {
        case .resNet18: bytesPerPixel = 5_300
        case .resNet34: bytesPerPixel = 6_500
        case .resNet50: bytesPerPixel = 8_800
        case .resNet101: bytesPerPixel = 11_000
        }
        return BackboneTraits(
            trainingBytesPerPixel: bytesPerPixel,
            torchvision: depth.usesBottleneck
                ? .constructor("torchvision.models.segmentation.deeplabv3_\(name)")
                : .constructor(
                    "torchvision.models.segmentation.deeplabv3.DeepLabV3 over IntermediateLayerGetter(\(name))"),
            make: { configuration, generator in
                let plus = configuration.decoder == .v3plus
                return ResNet(
                    prefix: String(configuration.backbonePrefix.dropLast()), depth: depth,
                    inputChannels: configuration.inputChannels,
                    outputStride: configuration.outputStride, multiGrid: configuration.multiGrid,
                    dilatesWholeStage: plus, keepsLowLevelFeatures: plus, generator: &generator)
            })
    }
}

// MARK: - Quantisation

extension ResNet {
    var convUnits: [ConvUnit] {
        [stem] + stages.joined().flatMap { block in (block.downsample.map { [$0] } ?? []) + block.units }
    }

    var unitChains: [[ConvUnit]] { stages.joined().map(\.units) }

    var unitFeedingFirstBlock: ConvUnit? { nil }

    var unitFeedingHead: ConvUnit? { nil }

    /// layer3's last block (the auxiliary feature), layer4's last (the main one) and, when kept, layer1's last
    /// (the low-level one) are features.
    var quantizableBlocks: (blocks: [any QuantizableBlock], featureOutputs: Set<Int>) {
        let blocks = Array(stages.joined())
        let auxiliary = stages.prefix(3).reduce(0) { $0 + $1.count } - 1
        let lowLevel: Set = keepsLowLevelFeatures ? [stages[0].count - 1] : []
        return (blocks, lowLevel.union([auxiliary, blocks.count - 1]))
    }
}

// MARK: - The inference graph

extension ResNet {
    /// The stem, max pooling and the four stages; returns layer1's and layer4's outputs.
    func describe(_ x: String, in graph: inout InferenceGraph) -> (lowLevel: String, out: String) {
        var y = stem.describe(x, in: &graph)
        let prefix = String(stem.conv.weight.name.dropLast("conv1.weight".count))
        y = graph.node(
            "MaxPool", prefix + "maxpool", [y],
            [("kernel_shape", .ints([3, 3])), ("strides", .ints([2, 2])), ("pads", .ints([1, 1, 1, 1]))])
        var lowLevel = y
        for (index, stage) in stages.enumerated() {
            for block in stage {
                let identity = block.downsample?.describe(y, in: &graph) ?? y
                var z = y
                for unit in block.units.dropLast() { z = unit.describe(z, in: &graph) }
                y = block.units.last?.describe(z, residual: identity, in: &graph) ?? z
            }
            if index == 0 { lowLevel = y }
        }
        return (lowLevel, y)
    }
}
