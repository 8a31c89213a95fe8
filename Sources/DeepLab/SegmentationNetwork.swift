// The engine's public seams: what inference, training and checkpoints see of a network. The oneDNN-backed
// `Tensor` stays inside this target; callers exchange plain row-major `FloatTensor`s.

/// A dense Float32 array in row-major (C) order: NCHW for images and logits.
public struct FloatTensor: Equatable, Sendable {
    public var shape: [Int]
    public var values: [Float]

    /// Precondition: `values.count` equals the product of `shape`.
    public init(shape: [Int], values: [Float]) {
        precondition(shape.reduce(1, *) == values.count, "FloatTensor: \(values.count) values for shape \(shape)")
        self.shape = shape
        self.values = values
    }

    /// A tensor of zeros.
    public init(zeros shape: [Int]) {
        self.init(shape: shape, values: [Float](repeating: 0, count: shape.reduce(1, *)))
    }
}

/// A named parameter or buffer, keyed exactly as torchvision's `state_dict` keys it
/// (`backbone.layer1.0.conv1.weight`, `classifier.4.bias`, `backbone.bn1.running_mean`).
///
/// `value` is the canonical storage in PyTorch's layout (OIHW for convolutions); the engine copies it into its
/// oneDNN memories when `version` changes. Optimizers update `value` in place and call `markUpdated()`.
public final class Parameter {
    public let name: String
    public let shape: [Int]
    public var value: [Float]
    /// dLoss/dvalue, accumulated by `backward`, cleared by `SegmentationNetwork.zeroGradients()`.
    /// Empty for buffers. Zeros until first written: the storage is made on first mutation, so a model that only
    /// infers holds no gradients (for DeepLabV3-ResNet-50, 158 MB of resident memory).
    public var gradient: [Float] {
        get { gradientStorage ?? zeroGradient() }
        set { gradientStorage = newValue }
        _modify {
            if gradientStorage == nil { gradientStorage = zeroGradient() }
            yield &gradientStorage!
        }
    }
    private var gradientStorage: [Float]?
    /// False for buffers (batch-norm running statistics, `num_batches_tracked`), which no optimizer touches.
    public let isTrainable: Bool
    /// Incremented on every change of `value`, so cached copies know when to refresh.
    public private(set) var version = 0

    public init(name: String, shape: [Int], value: [Float], isTrainable: Bool = true) {
        precondition(shape.reduce(1, *) == value.count, "Parameter \(name): \(value.count) values for \(shape)")
        self.name = name
        self.shape = shape
        self.value = value
        self.isTrainable = isTrainable
    }

    private func zeroGradient() -> [Float] { isTrainable ? [Float](repeating: 0, count: value.count) : [] }

    /// Records that `value` changed.
    public func markUpdated() { version &+= 1 }
}

/// Called during a backward pass with parameters whose gradients are complete (each parameter is used once in
/// the forward, so its gradient is final once its module's backward returns), in the order they complete.
public typealias GradientsReady = ([Parameter]) -> Void

/// A segmentation network the trainer can drive: forward in training or eval mode, backward, parameters.
public protocol SegmentationNetwork: AnyObject {
    /// Every parameter and buffer, in `state_dict` order.
    var parameters: [Parameter] { get }

    /// Logits [N, K, H, W] for input [N, C, H, W] (upsampled to the input size). In training mode batch norm
    /// uses batch statistics (updating its running statistics), dropout is active, and what `backward` needs
    /// is kept.
    func forward(_ input: FloatTensor, training: Bool) throws -> FloatTensor

    /// Backpropagates dLoss/dLogits from the last `forward(_:training: true)`, accumulating into every trainable
    /// parameter's `gradient`, and calls `gradientsReady` with parameters as their gradients complete (every
    /// trainable parameter exactly once; parameters without gradients may be included), so that work on them
    /// (an all-reduce) can start while the rest of the pass runs.
    func backward(_ gradientOfLogits: FloatTensor, gradientsReady: GradientsReady) throws

    /// Sets every trainable parameter's gradient to zero.
    func zeroGradients()

    /// Keys the random draws of the training forwards that follow (dropout masks) to the 0-based training
    /// `step`: each draw is a function of the network's seed, the layer and the step alone, so a run resumed at
    /// any step draws exactly what the uninterrupted run drew. Each training forward advances the step by one.
    /// Networks without random draws ignore it.
    func keyRandomDraws(toStep step: Int)

    /// Keys the next training forward's random draws to its samples' global indices (one per image of the
    /// batch, as `TrainingBatch.sampleIndices` gives them), so each image's draws depend on the network's seed,
    /// the layer and the sample alone: a data-parallel job whose ranks each forward part of a batch draws what
    /// one process forwarding the whole batch draws. Networks without random draws ignore it.
    func keyRandomDraws(toStep step: Int, samples: [Int])
}

extension SegmentationNetwork {
    public func keyRandomDraws(toStep step: Int) {}

    public func keyRandomDraws(toStep step: Int, samples: [Int]) { keyRandomDraws(toStep: step) }

    /// Backpropagates without reporting which gradients are complete.
    public func backward(_ gradientOfLogits: FloatTensor) throws {
        try backward(gradientOfLogits, gradientsReady: { _ in })
    }
}
