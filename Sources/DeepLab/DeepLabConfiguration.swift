/// What a DeepLab model is: backbone, decoder, classes, input channels, output stride, ASPP rates and width, the
/// auxiliary head. Stored as JSON with every checkpoint so a model can always be rebuilt.
public struct DeepLabConfiguration: Codable, Equatable, Sendable {
    /// Architecture names as the CLI and torchvision-style factories spell them.
    public enum Architecture: String, Codable, CaseIterable, Sendable {
        case resnet18 = "deeplabv3_resnet18"
        case resnet34 = "deeplabv3_resnet34"
        case resnet50 = "deeplabv3_resnet50"
        case resnet101 = "deeplabv3_resnet101"
        case mobilenetV2 = "deeplabv3_mobilenet_v2"
    }

    /// What follows the backbone: DeepLabV3's head on the last features (torchvision's layout), or the DeepLabV3+
    /// decoder, which joins stride-4 features to the upsampled ASPP output (segmentation-models-pytorch's layout).
    public enum Decoder: String, Codable, CaseIterable, Sendable {
        /// torchvision's `DeepLabHead`: ASPP, 3 × 3, 1 × 1 classifier; logits at the output stride, resized to the
        /// input (half-pixel bilinear). Parameters under `backbone.`, `classifier.`.
        case v3
        /// DeepLabV3+ (Chen et al. 2018, arXiv:1802.02611) as `segmentation_models_pytorch.DeepLabV3Plus` builds
        /// it by default: separable ASPP and refinement, the stride-4 features projected to 48 channels and
        /// joined to the ASPP output resized to their size, a separable 3 × 3, a 1 × 1 classifier with bias, and
        /// logits at stride 4 resized to the input with `align_corners=True`. The dilated stages dilate every
        /// convolution (smp's `make_dilated`). Parameters under `encoder.`, `decoder.`, `segmentation_head.`.
        case v3plus
    }

    public var architecture: Architecture
    public var decoder: Decoder
    /// Classes K (≥ 2), background included.
    public var classCount: Int
    /// 1 (grayscale), 3 (RGB), or a volume's channels × (2N + 1) slices for 2.5-D context (1...64).
    public var inputChannels: Int
    /// 8 or 16: the backbone's total stride after dilation replaces the last stride(s).
    public var outputStride: Int
    /// Dilation rates of ASPP's 3×3 branches.
    public var atrousRates: [Int]
    /// Channels of every ASPP branch and of the head.
    public var asppChannels: Int
    /// Whether the FCN auxiliary head on layer3 (ResNet) or the stride-8 features (MobileNetV2) exists.
    public var auxiliaryHead: Bool
    /// MobileNetV2's width multiplier (1.0 for ResNets).
    public var widthMultiplier: Double
    /// ResNet layer4's per-block dilation multipliers (e.g. [1, 2, 4]), or nil.
    public var multiGrid: [Int]?
    /// Seed of the initial weights (and dropout masks).
    public var seed: UInt64
    /// Integer factor (1...4) by which the model resamples its input (bilinear) before the backbone; logits still
    /// come out at the input's size. The effective output stride is `outputStride / inputScale`: thin structures
    /// (a 2–3 pixel cortical ribbon) need it, as they need the paper's multi-scale inputs. 1 is torchvision's model.
    public var inputScale: Int

    /// torchvision's DeepLabV3 layout by default: output stride 8, rates 12/24/36, 256 ASPP channels.
    public init(
        architecture: Architecture, decoder: Decoder = .v3, classCount: Int, inputChannels: Int = 3,
        outputStride: Int = 8,
        atrousRates: [Int] = [12, 24, 36], asppChannels: Int = 256, auxiliaryHead: Bool = false,
        widthMultiplier: Double = 1, multiGrid: [Int]? = nil, seed: UInt64 = 0, inputScale: Int = 1
    ) {
        self.architecture = architecture
        self.decoder = decoder
        self.classCount = classCount
        self.inputChannels = inputChannels
        self.outputStride = outputStride
        self.atrousRates = atrousRates
        self.asppChannels = asppChannels
        self.auxiliaryHead = auxiliaryHead
        self.widthMultiplier = widthMultiplier
        self.multiGrid = multiGrid
        self.seed = seed
        self.inputScale = inputScale
    }

    /// The JSON keys checkpoints store (PyTorch's names, kept on disk as they always were).
    private enum CodingKeys: String, CodingKey {
        case architecture = "arch"
        case classCount = "numClasses"
        case auxiliaryHead = "aux"
        case decoder, inputChannels, outputStride, atrousRates, asppChannels, widthMultiplier, multiGrid, seed,
            inputScale
    }

    /// Decodes every field; `decoder` and `inputScale` are optional (checkpoints written before they existed mean
    /// `v3` and 1).
    public init(from coder: any Swift.Decoder) throws {
        let c = try coder.container(keyedBy: CodingKeys.self)
        architecture = try c.decode(Architecture.self, forKey: .architecture)
        self.decoder = try c.decodeIfPresent(Decoder.self, forKey: .decoder) ?? .v3
        classCount = try c.decode(Int.self, forKey: .classCount)
        inputChannels = try c.decode(Int.self, forKey: .inputChannels)
        outputStride = try c.decode(Int.self, forKey: .outputStride)
        atrousRates = try c.decode([Int].self, forKey: .atrousRates)
        asppChannels = try c.decode(Int.self, forKey: .asppChannels)
        auxiliaryHead = try c.decode(Bool.self, forKey: .auxiliaryHead)
        widthMultiplier = try c.decode(Double.self, forKey: .widthMultiplier)
        multiGrid = try c.decodeIfPresent([Int].self, forKey: .multiGrid)
        seed = try c.decode(UInt64.self, forKey: .seed)
        inputScale = try c.decodeIfPresent(Int.self, forKey: .inputScale) ?? 1
    }

    /// Throws `DeepLabError.invalidConfiguration` naming the first field out of range.
    public func validate() throws {
        guard classCount >= 2 else {
            throw DeepLabError.invalidConfiguration("numClasses is \(classCount); it must be at least 2")
        }
        guard (1...64).contains(inputChannels) else {
            throw DeepLabError.invalidConfiguration("inputChannels is \(inputChannels); it must be in 1...64")
        }
        guard outputStride == 8 || outputStride == 16 else {
            throw DeepLabError.invalidConfiguration("outputStride is \(outputStride); it must be 8 or 16")
        }
        guard !atrousRates.isEmpty, atrousRates.allSatisfy({ $0 >= 1 && $0 <= 512 }) else {
            throw DeepLabError.invalidConfiguration("atrousRates \(atrousRates) must be non-empty, each in 1...512")
        }
        guard asppChannels >= 1 && asppChannels <= 4096 else {
            throw DeepLabError.invalidConfiguration("asppChannels is \(asppChannels); it must be in 1...4096")
        }
        guard widthMultiplier > 0 && widthMultiplier <= 4 else {
            throw DeepLabError.invalidConfiguration("widthMultiplier is \(widthMultiplier); it must be in (0, 4]")
        }
        guard (1...4).contains(inputScale) else {
            throw DeepLabError.invalidConfiguration("inputScale is \(inputScale); it must be in 1...4")
        }
        if let grid = multiGrid, grid.isEmpty || grid.contains(where: { $0 < 1 || $0 > 16 }) {
            throw DeepLabError.invalidConfiguration("multiGrid \(grid) must be non-empty, each in 1...16")
        }
    }
}

extension DeepLabConfiguration {
    /// The `state_dict` prefix of the backbone's keys: torchvision's `backbone.`, or smp's `encoder.` (ResNet) and
    /// `encoder.features.` (MobileNetV2) for DeepLabV3+.
    public var backbonePrefix: String {
        decoder == .v3 ? "backbone." : architecture == .mobilenetV2 ? "encoder.features." : "encoder."
    }
}

extension DeepLabConfiguration.Decoder {
    /// The stride of the logits before their resize to the input: the output stride (DeepLabV3), or 4 (DeepLabV3+'s
    /// decoder, at the low-level features' stride).
    public func logitStride(outputStride: Int) -> Int { self == .v3plus ? min(4, outputStride) : outputStride }
}
