import SliceLabSupport

/// A DeepLabV3 backbone: the features the heads take (the auxiliary head's at stride 8 or 16, the main head's
/// at the output stride), its parameters under their torchvision `state_dict` keys, and the backward pass of
/// its last training forward. A new backbone is one file conforming to this, its `Architecture` case and entry
/// in `Architecture.makeBackbone`, and its parity golden.
protocol Backbone: AnyObject {
    /// Channels of the main head's input features.
    var outputChannels: Int { get }
    /// Channels of the auxiliary head's input features.
    var auxiliaryChannels: Int { get }
    /// Every parameter and buffer, in torchvision's `state_dict` order.
    var parameters: [Parameter] { get }
    /// Every convolution unit, in forward order (quantisation calibrates and configures them one by one).
    var convUnits: [ConvUnit] { get }
    /// Sequences of units in which each unit's output feeds the next unit alone (a block's units).
    var unitChains: [[ConvUnit]] { get }
    /// The residual blocks in forward order, each reading the previous one's output, and the indexes of those
    /// whose output is also a feature a head reads (int8 inference keeps those outputs f32).
    var quantizableBlocks: (blocks: [any QuantizableBlock], featureOutputs: Set<Int>) { get }
    /// The features (auxiliary, out) of input [N, C, H, W]; in training mode what `backward` needs is kept.
    func callAsFunction(_ x: Tensor, training: Bool) throws -> (auxiliary: Tensor, out: Tensor)
    /// Backpropagates the gradients of the main features and (optionally) the auxiliary ones, reporting each
    /// block's parameters as their gradients complete.
    func backward(out dOut: Tensor, auxiliary dAuxiliary: Tensor?, gradientsReady: GradientsReady) throws
    /// Appends the eval-mode backbone to `graph` from value `x`; returns the main head's input features.
    func describe(_ x: String, in graph: inout InferenceGraph) -> String
}

extension ResNet: Backbone {}
extension MobileNetV2: Backbone {}

extension DeepLabConfiguration.Architecture {
    /// This architecture's backbone for `configuration`, its weights drawn from `generator`.
    func makeBackbone(_ configuration: DeepLabConfiguration, generator: inout SeededGenerator) -> any Backbone {
        let depth: ResNet.Depth
        switch self {
        case .resnet18: depth = .resNet18
        case .resnet34: depth = .resNet34
        case .resnet50: depth = .resNet50
        case .resnet101: depth = .resNet101
        case .mobilenetV2:
            return MobileNetV2(
                prefix: "backbone", inputChannels: configuration.inputChannels,
                widthMultiplier: configuration.widthMultiplier,
                outputStride: configuration.outputStride, generator: &generator)
        }
        return ResNet(
            prefix: "backbone", depth: depth, inputChannels: configuration.inputChannels,
            outputStride: configuration.outputStride, multiGrid: configuration.multiGrid,
            generator: &generator)
    }
}
