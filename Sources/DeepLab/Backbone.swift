import SliceLabSupport

/// The features a backbone's forward gives the heads.
struct BackboneFeatures {
    /// The stride-4 features the DeepLabV3+ decoder joins, when the backbone keeps them (`keepsLowLevelFeatures`).
    var lowLevel: Tensor?
    /// The auxiliary head's input (stride 8 or 16).
    var auxiliary: Tensor
    /// The main head's input (the output stride).
    var out: Tensor
}

/// A DeepLab backbone: the features the heads take (the auxiliary head's at stride 8 or 16, the main head's
/// at the output stride, DeepLabV3+'s at stride 4), its parameters under their `state_dict` keys, and the
/// backward pass of its last training forward. A new backbone is one file conforming to this (with its `traits`),
/// its `Architecture` case and line in `Architecture.traits`, and its parity goldens.
protocol Backbone: AnyObject {
    /// Channels of the main head's input features.
    var outputChannels: Int { get }
    /// Channels of the auxiliary head's input features.
    var auxiliaryChannels: Int { get }
    /// Channels of the stride-4 features (DeepLabV3+'s low-level input).
    var lowLevelChannels: Int { get }
    /// Whether forwards return the stride-4 features (a DeepLabV3+ model's backbone).
    var keepsLowLevelFeatures: Bool { get }
    /// Every parameter and buffer, in `state_dict` order.
    var parameters: [Parameter] { get }
    /// Every convolution unit, in forward order (quantisation calibrates and configures them one by one).
    var convUnits: [ConvUnit] { get }
    /// Sequences of units in which each unit's output feeds the next unit alone (a block's units).
    var unitChains: [[ConvUnit]] { get }
    /// The residual blocks in forward order, each reading the previous one's output, and the indexes of those
    /// whose output is also a feature a head reads (int8 inference keeps those outputs f32).
    var quantizableBlocks: (blocks: [any QuantizableBlock], featureOutputs: Set<Int>) { get }
    /// The unit whose output the first of `quantizableBlocks` alone reads (MobileNetV2's stem), nil where something
    /// else comes between (ResNet's max pooling).
    var unitFeedingFirstBlock: ConvUnit? { get }
    /// The unit that computes the main feature, which only the head's ASPP reads (MobileNetV2's 1 × 1 head), nil
    /// where that feature is a residual block's sum (ResNet's).
    var unitFeedingHead: ConvUnit? { get }
    /// The features of input [N, C, H, W]; in training mode what `backward` needs is kept.
    func callAsFunction(_ x: Tensor, training: Bool) throws -> BackboneFeatures
    /// The features of input [N, C, h, w] upscaled first to `size` (height, width) with half-pixel centres
    /// (`Operations.resizeHalfPixel`), or as it is for nil; a backbone may fuse the upscale with what reads it.
    func callAsFunction(_ x: Tensor, upscaledTo size: (Int, Int)?, training: Bool) throws -> BackboneFeatures
    /// Backpropagates the gradients of the main features and (optionally) the auxiliary and low-level ones,
    /// reporting each block's parameters as their gradients complete.
    func backward(
        out dOut: Tensor, auxiliary dAuxiliary: Tensor?, lowLevel dLowLevel: Tensor?,
        gradientsReady: GradientsReady) throws
    /// Appends the eval-mode backbone to `graph` from value `x`; returns the stride-4 features' value and the main
    /// head's input.
    func describe(_ x: String, in graph: inout InferenceGraph) -> (lowLevel: String, out: String)
}

extension Backbone {
    func callAsFunction(_ x: Tensor, upscaledTo size: (Int, Int)?, training: Bool) throws -> BackboneFeatures {
        try self(upscaledInput(x, to: size), training: training)
    }
}

extension ResNet: Backbone {}
extension MobileNetV2: Backbone {}

/// What the rest of SliceLab asks of an architecture without building it: the training memory the plan budgets,
/// and whether torchvision has a constructor for it; and how its backbone is built. Each backbone's file gives
/// its own (`ResNet.traits(_:)`, `MobileNetV2.traits`); `DeepLabConfiguration.Architecture.traits` is the
/// registry.
public struct BackboneTraits: Sendable {
    /// torchvision's callable for DeepLabV3 over this backbone, or why there is none.
    public enum Torchvision: Sendable, Equatable {
        case constructor(String)
        case none(reason: String)
    }

    /// Training memory (activations kept for the backward pass plus their gradients) per input pixel at the
    /// model's scaled input, at output stride 8, in bytes.
    public let trainingBytesPerPixel: Double
    public let torchvision: Torchvision
    let make: @Sendable (DeepLabConfiguration, inout SeededGenerator) -> any Backbone
}

extension DeepLabConfiguration.Architecture {
    /// The registry: each architecture's backbone facts. A new backbone is its file (conforming to `Backbone`,
    /// with its `traits`), its case in `Architecture`, its line here, and its parity golden.
    public var traits: BackboneTraits {
        switch self {
        case .resnet18: return ResNet.traits(.resNet18)
        case .resnet34: return ResNet.traits(.resNet34)
        case .resnet50: return ResNet.traits(.resNet50)
        case .resnet101: return ResNet.traits(.resNet101)
        case .mobilenetV2: return MobileNetV2.traits
        }
    }

    /// This architecture's backbone for `configuration`, its weights drawn from `generator`.
    func makeBackbone(_ configuration: DeepLabConfiguration, generator: inout SeededGenerator) -> any Backbone {
        traits.make(configuration, &generator)
    }
}

/// `x` upscaled to `size` with half-pixel centres (the model's input scale), profiled as the input upscale; `x` itself
/// without a size.
func upscaledInput(_ x: Tensor, to size: (Int, Int)?) throws -> Tensor {
    guard let size else { return x }
    return try LayerProfiling.operation("input upscale", "resize", bytes: { x.desc.byteCount + $0.desc.byteCount }) {
        try Operations.resizeHalfPixel(x, height: size.0, width: size.1)
    }
}
