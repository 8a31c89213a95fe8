import DeepLab
import DeepLabTraining
import Foundation
import SliceLabSupport

/// A per-pixel linear classifier (a 1×1 convolution with bias), exact forward and backward in pure Swift,
/// so the training loop can be tested without the oneDNN engine. `forward_count` is a buffer (like batch
/// norm's `num_batches_tracked`) counting training forwards, so checkpoints must restore buffers too.
final class PixelLinearNetwork: SegmentationNetwork {
    let inputChannels: Int
    let classCount: Int
    let weight: Parameter
    let bias: Parameter
    let forwardCount: Parameter
    private var lastInput: FloatTensor?
    /// Called before each forward with the number of training forwards so far (tests inject failures here).
    var beforeForward: ((_ trainingForwards: Int, _ training: Bool) throws -> Void)?
    /// Makes every logit NaN from this training forward on (tests of divergence).
    var nanFromForward: Int?

    init(inputChannels: Int, classCount: Int, seed: UInt64) {
        self.inputChannels = inputChannels
        self.classCount = classCount
        var random = SeededGenerator(seed: seed)
        weight = Parameter(
            name: "classifier.weight", shape: [classCount, inputChannels, 1, 1],
            value: (0..<(classCount * inputChannels)).map { _ in Float(random.normal() * 0.1) })
        bias = Parameter(name: "classifier.bias", shape: [classCount], value: [Float](repeating: 0, count: classCount))
        forwardCount = Parameter(name: "stats.forward_count", shape: [1], value: [0], isTrainable: false)
    }

    var parameters: [Parameter] { [weight, bias, forwardCount] }

    func forward(_ input: FloatTensor, training: Bool) throws -> FloatTensor {
        try beforeForward?(Int(forwardCount.value[0]), training)
        let (batch, channels) = (input.shape[0], input.shape[1])
        precondition(channels == inputChannels)
        let pixels = input.shape[2] * input.shape[3]
        var out = [Float](repeating: 0, count: batch * classCount * pixels)
        for n in 0..<batch {
            for k in 0..<classCount {
                let base = (n * classCount + k) * pixels
                for p in 0..<pixels { out[base + p] = bias.value[k] }
                for c in 0..<channels {
                    let w = weight.value[k * channels + c]
                    let inputBase = (n * channels + c) * pixels
                    for p in 0..<pixels { out[base + p] += w * input.values[inputBase + p] }
                }
            }
        }
        if training {
            if let nanFromForward, Int(forwardCount.value[0]) >= nanFromForward {
                out = [Float](repeating: .nan, count: out.count)
            }
            forwardCount.value[0] += 1
            forwardCount.markUpdated()
            lastInput = input
        }
        return FloatTensor(shape: [batch, classCount, input.shape[2], input.shape[3]], values: out)
    }

    func backward(_ gradientOfLogits: FloatTensor, gradientsReady: GradientsReady) throws {
        defer { gradientsReady(parameters) }
        guard let input = lastInput else { throw TrainingError.invalidConfiguration("backward before forward") }
        let (batch, channels) = (input.shape[0], input.shape[1])
        let pixels = input.shape[2] * input.shape[3]
        for n in 0..<batch {
            for k in 0..<classCount {
                let base = (n * classCount + k) * pixels
                var sum: Float = 0
                for p in 0..<pixels { sum += gradientOfLogits.values[base + p] }
                bias.gradient[k] += sum
                for c in 0..<channels {
                    let inputBase = (n * channels + c) * pixels
                    var dot: Float = 0
                    for p in 0..<pixels { dot += gradientOfLogits.values[base + p] * input.values[inputBase + p] }
                    weight.gradient[k * channels + c] += dot
                }
            }
        }
    }

    func zeroGradients() {
        for parameter in parameters where parameter.isTrainable {
            parameter.gradient = [Float](repeating: 0, count: parameter.value.count)
        }
    }
}
