// Backward passes of the composite modules, in the reverse order of their forward passes. Each consumes the
// state its last training-mode forward kept.

/// Sums gradients that meet at one tensor (nil entries are absent).
func addGradients(_ gradients: [Tensor?]) throws -> Tensor? {
    let present = gradients.compactMap { $0 }
    guard let first = present.first else { return nil }
    return present.count == 1 ? first : try Operations.sum([first] + present.dropFirst())
}

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

/// Called during a backward pass with parameters whose gradients are complete (each parameter is used once in
/// the forward, so its gradient is final once its module's backward returns), in the order they complete.
public typealias GradientsReady = ([Parameter]) -> Void

extension ResNet {
    /// Backpropagates the gradients of layer4's output and (optionally) layer3's, down to the stem's weights,
    /// reporting each block's parameters as they complete.
    func backward(out dOut: Tensor, auxiliary dAuxiliary: Tensor?, gradientsReady: GradientsReady) throws {
        guard let pooling else { throw DeepLabError.invalidBackward("no training-mode forward of the ResNet") }
        var gradient = dOut
        for (index, stage) in stages.enumerated().reversed() {
            if index == 2, let dAuxiliary { gradient = try Operations.sum([gradient, dAuxiliary]) }
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
    func backward(out dOut: Tensor, auxiliary dAuxiliary: Tensor?, gradientsReady: GradientsReady) throws {
        guard var gradient = try head.backward(dOut).input else {
            throw DeepLabError.invalidBackward("MobileNetV2 head produced no input gradient")
        }
        gradientsReady(head.parameters)
        for (i, block) in blocks.enumerated().reversed() {
            if i + 1 == MobileNetV2.auxiliaryIndex, let dAuxiliary { gradient = try Operations.sum([gradient, dAuxiliary]) }
            gradient = try block.backward(gradient)
            gradientsReady(block.parameters)
        }
        _ = try stem.backward(gradient, needsInputGradient: false)
        gradientsReady(stem.parameters)
    }
}

extension Dropout {
    /// dLoss/dInput = dLoss/dOutput × mask (the identity when the last forward had no dropout).
    func backward(_ dy: Tensor, outputDesc: MemoryDesc) throws -> Tensor {
        guard !mask.isEmpty else { return dy }
        let g = try dy.reordered(to: outputDesc)
        let output = try Tensor(desc: outputDesc)
        g.withStorage { source in output.withStorage { target in
            for i in 0..<min(mask.count, source.count) { target[i] = source[i] * mask[i] }
        } }
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
        let parts = try Operations.split(dJoined, channels: [Int](repeating: projection.conv.inputChannels / (branches.count + 1),
                                                                  count: branches.count + 1))
        var gradients: [Tensor?] = []
        for (branch, part) in zip(branches, parts) { gradients.append(try branch.backward(part).input) }
        let pooledGradient = try Operations.resizeBackward(parts[branches.count], forward: state.resize,
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
    func backward(_ dy: Tensor) throws -> Tensor {
        guard let g1 = try classifier.backward(dy).input, let g2 = try refine.backward(g1).input else {
            throw DeepLabError.invalidBackward("DeepLab head produced no input gradient")
        }
        return try aspp.backward(g2)
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
