import DeepLab
import Foundation

/// Adam with decoupled weight decay (Loshchilov and Hutter, arXiv:1711.05101), with `torch.optim.AdamW`'s exact
/// update (single-tensor path, Float32 tensors, bias corrections in Float64):
/// p ← p·(1 − lr·λ); m ← m + (1 − β₁)(g − m); v ← β₂·v + (1 − β₂)·g²;
/// p ← p − (lr / (1 − β₁ᵗ))·m / (√v / √(1 − β₂ᵗ) + ε).
public final class AdamW: Optimizer {
    public struct Configuration: Codable, Equatable, Sendable {
        public var beta1: Double
        public var beta2: Double
        public var epsilon: Double
        public var weightDecay: Double

        public init(beta1: Double = 0.9, beta2: Double = 0.999, epsilon: Double = 1e-8, weightDecay: Double = 1e-2) {
            self.beta1 = beta1
            self.beta2 = beta2
            self.epsilon = epsilon
            self.weightDecay = weightDecay
        }
    }

    public let parameters: [Parameter]
    public let configuration: Configuration
    public private(set) var stepCount = 0
    private var firstMoments: [String: [Float]] = [:]
    private var secondMoments: [String: [Float]] = [:]

    public init(parameters: [Parameter], configuration: Configuration = Configuration()) {
        self.parameters = parameters
        self.configuration = configuration
    }

    public func step(learningRate: Double) {
        stepCount += 1
        let t = Double(stepCount)
        let decay = Float(1 - learningRate * configuration.weightDecay)
        let beta2 = Float(configuration.beta2)
        let (oneMinusBeta1, oneMinusBeta2) = (Float(1 - configuration.beta1), Float(1 - configuration.beta2))
        let stepSize = Float(learningRate / (1 - pow(configuration.beta1, t)))
        let correction2 = Float((1 - pow(configuration.beta2, t)).squareRoot())
        let epsilon = Float(configuration.epsilon)
        for parameter in parameters where parameter.isTrainable {
            let count = parameter.value.count
            // Taken out of the dictionaries while updated, so the arrays are uniquely referenced (no copy).
            var m = firstMoments.removeValue(forKey: parameter.name) ?? [Float](repeating: 0, count: count)
            var v = secondMoments.removeValue(forKey: parameter.name) ?? [Float](repeating: 0, count: count)
            m.withUnsafeMutableBufferPointer { m in
                v.withUnsafeMutableBufferPointer { v in
                    parameter.gradient.withUnsafeBufferPointer { gradient in
                        parameter.value.withUnsafeMutableBufferPointer { value in
                            forEachSlice(of: 0..<count, minimum: 1 << 16) { slice in
                                for i in slice {
                                    let g = gradient[i]
                                    value[i] *= decay
                                    m[i] += oneMinusBeta1 * (g - m[i])
                                    v[i] = v[i] * beta2 + oneMinusBeta2 * (g * g)
                                    let denominator = v[i].squareRoot() / correction2 + epsilon
                                    value[i] += -stepSize * (m[i] / denominator)
                                }
                            }
                        }
                    }
                }
            }
            firstMoments[parameter.name] = m
            secondMoments[parameter.name] = v
            parameter.markUpdated()
        }
    }

    public func state() -> OptimizerState {
        var buffers: [String: [String: [Float]]] = [:]
        for (name, m) in firstMoments { buffers[name] = ["exp_avg": m, "exp_avg_sq": secondMoments[name] ?? []] }
        return OptimizerState(kind: "adamw", stepCount: stepCount, buffers: buffers)
    }

    public func restore(_ state: OptimizerState) throws {
        guard state.kind == "adamw" else {
            throw TrainingError.invalidState(file: "optimizer state", reason: "holds \(state.kind), not adamw")
        }
        var first: [String: [Float]] = [:]
        var second: [String: [Float]] = [:]
        for parameter in parameters where parameter.isTrainable {
            guard let m = try state.buffer("exp_avg", of: parameter, source: "optimizer state") else { continue }
            guard let v = try state.buffer("exp_avg_sq", of: parameter, source: "optimizer state") else {
                throw TrainingError.invalidState(
                    file: "optimizer state",
                    reason: "exp_avg_sq of \(parameter.name) is missing")
            }
            (first[parameter.name], second[parameter.name]) = (m, v)
        }
        (firstMoments, secondMoments, stepCount) = (first, second, state.stepCount)
    }
}
