import SliceLabSupport

/// DeepLabV3 as torchvision composes it: a backbone returning named features, `DeepLabHead` on the last one,
/// an optional `FCNHead` on the auxiliary one, each upsampled bilinearly to the input size. Parameter names are
/// torchvision's `state_dict` keys. With `configuration.decoder == .v3plus`, DeepLabV3+ as
/// segmentation-models-pytorch composes it (`DeepLabHead` then joins the stride-4 features), under smp's keys.
///
/// Reference: Chen et al. 2017 (arXiv:1706.05587), 2018 (arXiv:1802.02611); torchvision
/// `models.segmentation.deeplabv3`; segmentation-models-pytorch `DeepLabV3Plus`.
public final class DeepLabV3: SegmentationNetwork {
    public let configuration: DeepLabConfiguration
    public let parameters: [Parameter]

    let backbone: any Backbone
    let head: DeepLabHead
    let auxiliaryHead: FCNHead?
    /// The int8 quantisation in use (`apply(_:)`), nil for float32.
    public internal(set) var quantization: ModelQuantization?
    /// How the bf16 convolutions run (`useBf16(_:)`), nil for float32.
    public internal(set) var bf16: Bf16Execution?

    /// Auxiliary logits [N, K, H, W] of the last forward, when the model has the auxiliary head.
    public private(set) var auxiliaryLogits: FloatTensor?
    /// What profiled forwards' operations other than convolutions cost (`operationProfiles`).
    let operations = OperationProfiles()

    /// A model with freshly initialised weights (Kaiming normal, seeded by `configuration.seed`).
    ///
    /// - Throws: `DeepLabError.invalidConfiguration`.
    public init(_ configuration: DeepLabConfiguration) throws {
        try configuration.validate()
        self.configuration = configuration
        var generator = SeededGenerator(seed: configuration.seed)
        backbone = configuration.architecture.makeBackbone(configuration, generator: &generator)
        head = DeepLabHead(
            configuration.decoder, inputChannels: backbone.outputChannels,
            lowLevelChannels: backbone.lowLevelChannels, classCount: configuration.classCount,
            atrousRates: configuration.atrousRates, channels: configuration.asppChannels,
            generator: &generator)
        auxiliaryHead =
            configuration.auxiliaryHead
            ? FCNHead(
                prefix: "aux_classifier", inputChannels: backbone.auxiliaryChannels,
                classCount: configuration.classCount,
                generator: &generator)
            : nil
        parameters = backbone.parameters + head.parameters + (auxiliaryHead?.parameters ?? [])
    }

    /// Parameters by `state_dict` key.
    public var parametersByName: [String: Parameter] {
        Dictionary(parameters.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Logits [N, K, H, W] for input [N, C, H, W], upsampled to the input size (torchvision's `out`; smp's output
    /// for DeepLabV3+, whose upsampling aligns corners).
    ///
    /// - Throws: `DeepLabError.invalidInput` for a shape the model cannot take; `.oneDNN` from the engine.
    public func forward(_ input: FloatTensor, training: Bool) throws -> FloatTensor {
        try logitsTensor(input, training: training).floatTensor()
    }

    /// Softmax probabilities [N, K, H, W] for input [N, C, H, W] (eval mode). Rests on oneDNN softmax.
    public func probabilities(_ input: FloatTensor) throws -> FloatTensor {
        try Operations.softmax(logitsTensor(input, training: false)).floatTensor()
    }

    func logitsTensor(_ input: FloatTensor, training: Bool) throws -> Tensor {
        try LayerProfiling.$operations.withValue(training ? nil : operations) {
            try logitsTensorProfiled(input, training: training)
        }
    }

    private func logitsTensorProfiled(_ input: FloatTensor, training: Bool) throws -> Tensor {
        let s = input.shape
        guard s.count == 4, s[0] >= 1, s[1] == configuration.inputChannels, s[2] >= 1, s[3] >= 1 else {
            throw DeepLabError.invalidInput("expected [N, \(configuration.inputChannels), H, W], got \(s)")
        }
        let scale = configuration.inputScale
        let features = try backbone(
            Tensor(input), upscaledTo: scale > 1 ? (s[2] * scale, s[3] * scale) : nil, training: training)
        let logits = try head(features, training: training)
        var auxiliaryState: (shape: [Int], resize: Primitive)?
        if let auxiliaryHead {
            let a = try auxiliaryHead(features.auxiliary, training: training)
            let (resized, resize) = try Operations.resizeBilinear(a, height: s[2], width: s[3], training: training)
            auxiliaryLogits = try resized.floatTensor()
            auxiliaryState = (a.shape, resize)
        } else {
            auxiliaryLogits = nil
        }
        let output: Tensor
        var resize: Primitive?
        (output, resize) = try LayerProfiling.operation(
            "logits resize", "resize", bytes: { logits.desc.byteCount + $0.0.desc.byteCount }
        ) {
            configuration.decoder == .v3plus
                ? (try Operations.resizeAlignedCorners(logits, height: s[2], width: s[3]), nil)
                : try Operations.resizeBilinear(logits, height: s[2], width: s[3], training: training)
        }
        saved =
            training
            ? Saved(
                outputShape: output.shape, headShape: logits.shape, resize: resize,
                auxiliary: auxiliaryState) : nil
        return output
    }

    private struct Saved {
        let outputShape: [Int]
        let headShape: [Int]
        /// The logits' resize (half-pixel, DeepLabV3), nil for DeepLabV3+'s aligned corners.
        let resize: Primitive?
        let auxiliary: (shape: [Int], resize: Primitive)?
    }

    private var saved: Saved?

    /// Backpropagates dLoss/dLogits (and, with the auxiliary head, optionally dLoss/dAuxiliaryLogits) from the
    /// last training-mode forward, accumulating into every trainable parameter's gradient.
    ///
    /// `gradientsReady` is called with each module's parameters as their gradients complete: the heads first,
    /// then the backbone's blocks from the last to the stem.
    ///
    /// - Throws: `DeepLabError.invalidBackward` without a training forward or for a gradient of the wrong shape.
    public func backward(
        _ gradientOfLogits: FloatTensor, auxiliary gradientOfAuxiliaryLogits: FloatTensor?,
        gradientsReady: GradientsReady = { _ in }
    ) throws {
        guard let saved else {
            throw DeepLabError.invalidBackward("call forward(_:training: true) before backward")
        }
        guard gradientOfLogits.shape == saved.outputShape else {
            throw DeepLabError.invalidBackward(
                "gradient shape \(gradientOfLogits.shape) differs from the logits' "
                    + "\(saved.outputShape)")
        }
        let dLogits =
            try saved.resize.map {
                try Operations.resizeBackward(Tensor(gradientOfLogits), forward: $0, sourceShape: saved.headShape)
            } ?? Operations.resizeAlignedCornersBackward(Tensor(gradientOfLogits), sourceShape: saved.headShape)
        let (dOut, dLowLevel) = try head.backward(dLogits)
        gradientsReady(head.parameters)
        var dAuxiliary: Tensor?
        if let auxiliaryHead, let state = saved.auxiliary, let g = gradientOfAuxiliaryLogits {
            guard g.shape == saved.outputShape else {
                throw DeepLabError.invalidBackward(
                    "auxiliary gradient shape \(g.shape) differs from \(saved.outputShape)")
            }
            let d = try Operations.resizeBackward(Tensor(g), forward: state.resize, sourceShape: state.shape)
            dAuxiliary = try auxiliaryHead.backward(d)
            gradientsReady(auxiliaryHead.parameters)
        }
        try backbone.backward(out: dOut, auxiliary: dAuxiliary, lowLevel: dLowLevel, gradientsReady: gradientsReady)
    }

    public func backward(_ gradientOfLogits: FloatTensor, gradientsReady: GradientsReady) throws {
        try backward(gradientOfLogits, auxiliary: nil, gradientsReady: gradientsReady)
    }

    /// Switches dropout on or off in training mode (off makes training forwards deterministic, e.g. for
    /// gradient checks).
    func setDropout(enabled: Bool) {
        head.aspp.dropout.isEnabled = enabled
        auxiliaryHead?.dropout.isEnabled = enabled
    }

    /// Keys both dropout layers' masks to `step` (see `SegmentationNetwork.keyRandomDraws(toStep:)`).
    public func keyRandomDraws(toStep step: Int) {
        head.aspp.dropout.step = UInt64(max(0, step))
        auxiliaryHead?.dropout.step = UInt64(max(0, step))
    }

    /// Keys both dropout layers' next masks to the batch's samples' global indices (see
    /// `SegmentationNetwork.keyRandomDraws(toStep:samples:)`).
    public func keyRandomDraws(toStep step: Int, samples: [Int]) {
        keyRandomDraws(toStep: step)
        head.aspp.dropout.sampleKeys = samples
        auxiliaryHead?.dropout.sampleKeys = samples
    }

    public func zeroGradients() {
        for p in parameters where p.isTrainable {
            p.gradient.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        }
    }
}
