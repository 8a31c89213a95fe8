import DeepLab

/// Stochastic gradient descent with momentum, dampening, weight decay and optional Nesterov momentum, with
/// `torch.optim.SGD`'s exact update (single-tensor path, Float32 arithmetic):
/// g ← grad + λ·p; b ← g on the first step, else μ·b + (1 − τ)·g; g ← g + μ·b (Nesterov) or b; p ← p − lr·g.
public final class SGD: Optimizer {
    public struct Configuration: Codable, Equatable, Sendable {
        public var momentum: Double
        public var dampening: Double
        public var weightDecay: Double
        public var nesterov: Bool

        public init(
            momentum: Double = 0.9, dampening: Double = 0, weightDecay: Double = 1e-4,
            nesterov: Bool = false
        ) {
            self.momentum = momentum
            self.dampening = dampening
            self.weightDecay = weightDecay
            self.nesterov = nesterov
        }
    }

    public let parameters: [Parameter]
    public let configuration: Configuration
    public private(set) var stepCount = 0
    private var momentumBuffers: [String: [Float]] = [:]

    public init(parameters: [Parameter], configuration: Configuration = Configuration()) {
        self.parameters = parameters
        self.configuration = configuration
    }

    public func step(learningRate: Double) {
        let (momentum, dampening) = (Float(configuration.momentum), Float(1 - configuration.dampening))
        let (weightDecay, rate) = (Float(configuration.weightDecay), Float(-learningRate))
        let nesterov = configuration.nesterov
        for parameter in parameters where parameter.isTrainable {
            let count = parameter.value.count
            // Taken out of the dictionary while updated, so the array is uniquely referenced (no copy).
            let previous = momentumBuffers.removeValue(forKey: parameter.name)
            var buffer = momentum == 0 ? [] : previous ?? [Float](repeating: 0, count: count)
            let first = previous == nil
            parameter.gradient.withUnsafeBufferPointer { gradient in
                parameter.value.withUnsafeMutableBufferPointer { value in
                    buffer.withUnsafeMutableBufferPointer { buffer in
                        forEachSlice(of: 0..<count, minimum: 1 << 16) { slice in
                            for i in slice {
                                var direction = gradient[i]
                                if weightDecay != 0 { direction += weightDecay * value[i] }
                                if momentum != 0 {
                                    buffer[i] = first ? direction : buffer[i] * momentum + dampening * direction
                                    direction = nesterov ? direction + momentum * buffer[i] : buffer[i]
                                }
                                value[i] += rate * direction
                            }
                        }
                    }
                }
            }
            if momentum != 0 { momentumBuffers[parameter.name] = buffer }
            parameter.markUpdated()
        }
        stepCount += 1
    }

    public func state() -> OptimizerState {
        OptimizerState(
            kind: "sgd", stepCount: stepCount,
            buffers: momentumBuffers.mapValues { ["momentum_buffer": $0] })
    }

    public func restore(_ state: OptimizerState) throws {
        guard state.kind == "sgd" else {
            throw TrainingError.invalidState(file: "optimizer state", reason: "holds \(state.kind), not sgd")
        }
        var buffers: [String: [Float]] = [:]
        for parameter in parameters where parameter.isTrainable {
            if let buffer = try state.buffer("momentum_buffer", of: parameter, source: "optimizer state") {
                buffers[parameter.name] = buffer
            }
        }
        momentumBuffers = buffers
        stepCount = state.stepCount
    }
}
