import DeepLab

/// An optimizer over a network's trainable parameters: one `step` per batch, after `backward`.
/// Buffers (`isTrainable == false`) are never touched.
public protocol Optimizer: AnyObject {
    /// The parameters it updates, in `state_dict` order.
    var parameters: [Parameter] { get }
    /// How many steps have been taken.
    var stepCount: Int { get }
    /// Updates every trainable parameter's `value` from its `gradient` and calls `markUpdated()`.
    func step(learningRate: Double)
    /// Everything needed to continue exactly: the step count and the per-parameter buffers.
    func state() -> OptimizerState
    /// Continues from a stored state.
    ///
    /// - Throws: `TrainingError.invalidState` when the state belongs to another optimizer or other parameters.
    func restore(_ state: OptimizerState) throws
}

/// An optimizer's resumable state: its kind, its step count and named per-parameter buffers
/// (`momentum_buffer`, `exp_avg`, `exp_avg_sq`, as `torch.optim` names them).
public struct OptimizerState: Equatable, Sendable {
    public var kind: String
    public var stepCount: Int
    /// Buffers keyed by parameter name, then buffer name.
    public var buffers: [String: [String: [Float]]]

    public init(kind: String, stepCount: Int, buffers: [String: [String: [Float]]]) {
        self.kind = kind
        self.stepCount = stepCount
        self.buffers = buffers
    }

    /// The buffer `name` of `parameter`, checked against its size.
    func buffer(_ name: String, of parameter: Parameter, source: String) throws -> [Float]? {
        guard let values = buffers[parameter.name]?[name] else { return nil }
        guard values.count == parameter.value.count else {
            throw TrainingError.invalidState(
                file: source,
                reason: "optimizer buffer \(name) of \(parameter.name) "
                    + "holds \(values.count) values for a parameter of \(parameter.value.count)")
        }
        return values
    }
}

/// Which optimizer, with its hyperparameters (the learning rate comes from the schedule). Stored with the
/// checkpoint's training configuration.
public enum OptimizerConfiguration: Codable, Equatable, Sendable {
    case sgd(SGD.Configuration)
    case adamW(AdamW.Configuration)

    /// The optimizers by name (`--optimizer`).
    public enum Kind: String, CaseIterable, Sendable {
        case sgd, adamw
    }

    /// `kind` with its default settings.
    public init(_ kind: Kind) {
        switch kind {
        case .sgd: self = .sgd(SGD.Configuration())
        case .adamw: self = .adamW(AdamW.Configuration())
        }
    }

    /// A new optimizer over `parameters`.
    public func makeOptimizer(parameters: [Parameter]) -> Optimizer {
        switch self {
        case .sgd(let configuration): return SGD(parameters: parameters, configuration: configuration)
        case .adamW(let configuration): return AdamW(parameters: parameters, configuration: configuration)
        }
    }
}

/// Rescales every trainable gradient so their global L2 norm is at most `maxNorm`, as
/// `torch.nn.utils.clip_grad_norm_(parameters, max_norm)` does (coefficient maxNorm / (norm + 1e-6), at most 1).
///
/// - Returns: the global norm before clipping.
@discardableResult
public func clipGradientNorm(_ parameters: [Parameter], maxNorm: Double) -> Double {
    var sumOfSquares = 0.0
    for parameter in parameters where parameter.isTrainable {
        var tensorSum: Float = 0  // PyTorch takes each tensor's norm in its own precision
        parameter.gradient.withUnsafeBufferPointer { for g in $0 { tensorSum += g * g } }
        sumOfSquares += Double(tensorSum)
    }
    let norm = sumOfSquares.squareRoot()
    let coefficient = Float(min(1, maxNorm / (norm + 1e-6)))
    if coefficient < 1 {
        for parameter in parameters where parameter.isTrainable {
            parameter.gradient.withUnsafeMutableBufferPointer { for i in $0.indices { $0[i] *= coefficient } }
        }
    }
    return norm
}
