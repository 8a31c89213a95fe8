import Foundation
import SliceLabSupport

// MARK: - Random initialisation

/// Weight initialisation and dropout masks draw from SliceLab's one seeded generator (seed recorded by callers).
extension SeededGenerator {
    /// A uniform sample in [−1, 1).
    mutating func symmetricUniform() -> Float {
        Float(uniform() * 2 - 1)
    }
}

// MARK: - Conv2d

/// A 2-D convolution's parameters and geometry, as PyTorch's `Conv2d`: weight [O, I/groups, k, k], optional bias [O].
final class Conv2d {
    let weight: Parameter
    let bias: Parameter?
    let inputChannels: Int
    let outputChannels: Int
    let window: Window
    let groups: Int

    /// Kaiming-uniform (fan-out, ReLU gain: bound √(6/fan-out)) initialised weights and zero bias — the variance
    /// of torchvision's ResNet initialisation (which draws from a normal).
    init(
        name: String, inputChannels: Int, outputChannels: Int, kernelSize: Int, stride: Int = 1, padding: Int = 0,
        dilation: Int = 1, groups: Int = 1, bias: Bool = false, generator: inout SeededGenerator
    ) {
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
        self.window = Window(kernel: kernelSize, stride: stride, padding: padding, dilation: dilation)
        self.groups = groups
        let shape = [outputChannels, inputChannels / groups, kernelSize, kernelSize]
        let fanOut = Float(outputChannels * kernelSize * kernelSize / groups)
        let bound = (6 / fanOut).squareRoot()
        let count = shape.reduce(1, *)
        var values = [Float](repeating: 0, count: count)
        values.withUnsafeMutableBufferPointer { buffer in
            for i in 0..<count { buffer[i] = generator.symmetricUniform() * bound }
        }
        weight = Parameter(name: name + ".weight", shape: shape, value: values)
        self.bias =
            bias
            ? Parameter(
                name: name + ".bias", shape: [outputChannels],
                value: [Float](repeating: 0, count: outputChannels)) : nil
    }

    var parameters: [Parameter] { [weight] + (bias.map { [$0] } ?? []) }

    /// oneDNN's weight dimensions: [O, I, k, k], or [G, O/G, I/G, k, k] when grouped.
    var weightDims: [Int] {
        let k = window.kernel
        return groups == 1
            ? [outputChannels, inputChannels, k, k]
            : [groups, outputChannels / groups, inputChannels / groups, k, k]
    }

    /// Output dims for an input of dims `s`.
    func outputDims(_ s: [Int]) -> [Int] {
        [s[0], outputChannels, window.outputExtent(s[2]), window.outputExtent(s[3])]
    }

    /// The convolution operation descriptor for input `x` (layouts left to oneDNN). With `explicitPadding`, the
    /// source is the input already padded (`paddedDims`) and the convolution itself pads nothing.
    func forwardDescriptor(
        _ s: [Int], training: Bool, withBias: Bool,
        explicitPadding: Bool = false
    ) throws -> ConvolutionDescriptor {
        try ConvolutionOp.forward(
            source: explicitPadding ? paddedDims(s) : s, weights: weightDims,
            destination: outputDims(s), bias: withBias, training: training,
            geometry(s, explicitPadding: explicitPadding))
    }

    /// Input dims `s` with the leading and trailing paddings added (trailing ones clamped at 0: a negative one
    /// only means the last rows are never read).
    func paddedDims(_ s: [Int]) -> [Int] {
        let g = geometry(s)
        return [s[0], s[1], s[2] + Int(g.left[0] + max(g.right[0], 0)), s[3] + Int(g.left[1] + max(g.right[1], 0))]
    }

    /// The convolution's geometry on an input of dims `s`; with `explicitPadding`, on that input padded by
    /// `paddedDims` (no leading padding; a negative trailing one kept).
    func geometry(_ s: [Int], explicitPadding: Bool = false) -> ConvolutionGeometry {
        let o = outputDims(s)
        let right = [
            Int64(window.trailingPadding(input: s[2], output: o[2])),
            Int64(window.trailingPadding(input: s[3], output: o[3]))
        ]
        return ConvolutionGeometry(
            strides: [Int64(window.stride), Int64(window.stride)],
            dilation: [Int64(window.dilation - 1), Int64(window.dilation - 1)],
            left: explicitPadding ? [0, 0] : [Int64(window.padding), Int64(window.padding)],
            right: explicitPadding ? right.map { min($0, 0) } : right)
    }
}

// MARK: - BatchNorm2d

/// Batch normalisation's parameters and buffers, as PyTorch's `BatchNorm2d` (eps 1e-5, momentum 0.1).
final class BatchNorm2d {
    let weight: Parameter
    let bias: Parameter
    let runningMean: Parameter
    let runningVariance: Parameter
    let batchesTracked: Parameter
    let channels: Int
    let epsilon: Float = 1e-5
    let momentum: Float = 0.1

    init(name: String, channels: Int) {
        self.channels = channels
        weight = Parameter(name: name + ".weight", shape: [channels], value: [Float](repeating: 1, count: channels))
        bias = Parameter(name: name + ".bias", shape: [channels], value: [Float](repeating: 0, count: channels))
        runningMean = Parameter(
            name: name + ".running_mean", shape: [channels],
            value: [Float](repeating: 0, count: channels), isTrainable: false)
        runningVariance = Parameter(
            name: name + ".running_var", shape: [channels],
            value: [Float](repeating: 1, count: channels), isTrainable: false)
        batchesTracked = Parameter(name: name + ".num_batches_tracked", shape: [], value: [0], isTrainable: false)
    }

    var parameters: [Parameter] { [weight, bias, runningMean, runningVariance, batchesTracked] }

    /// Folds eval-mode normalisation into a preceding convolution's weights (OIHW, `perOutput` values per
    /// output channel) and bias: w' = w·γ/√(σ²+ε), b' = β + (b − μ)·γ/√(σ²+ε).
    func fold(weights: [Float], bias: [Float]?) -> ([Float], [Float]) {
        let perOutput = weights.count / channels
        var w = weights
        var b = [Float](repeating: 0, count: channels)
        let gamma = weight.value
        let beta = self.bias.value
        let mean = runningMean.value
        let variance = runningVariance.value
        w.withUnsafeMutableBufferPointer { buffer in
            for c in 0..<channels {
                let scale = gamma[c] / (variance[c] + epsilon).squareRoot()
                var i = c * perOutput
                let end = i + perOutput
                while i < end {
                    buffer[i] *= scale
                    i += 1
                }
                b[c] = beta[c] + ((bias?[c] ?? 0) - mean[c]) * scale
            }
        }
        return (w, b)
    }

    /// Updates the running statistics from a batch's mean and biased variance over `count` values per channel,
    /// as PyTorch does (unbiased variance in the running estimate).
    func updateRunningStatistics(mean: [Float], variance: [Float], count: Int) {
        let correction = count > 1 ? Float(count) / Float(count - 1) : 1
        for c in 0..<channels {
            runningMean.value[c] = (1 - momentum) * runningMean.value[c] + momentum * mean[c]
            runningVariance.value[c] = (1 - momentum) * runningVariance.value[c] + momentum * variance[c] * correction
        }
        batchesTracked.value[0] += 1
        runningMean.markUpdated()
        runningVariance.markUpdated()
        batchesTracked.markUpdated()
    }
}

/// The activation after a convolution unit.
enum Activation: Hashable {
    case none, relu, relu6

    var postOp: PrimitiveAttributes.PostOp? {
        switch self {
        case .none: return nil
        case .relu: return .relu
        case .relu6: return .clip(0, 6)
        }
    }
}

// MARK: - Synchronised batch norm

/// Sums per-channel batch statistics over the ranks of a data-parallel job, in place.
public typealias BatchStatisticsSum = (inout [Double]) throws -> Void

/// Synchronised batch normalisation (PyTorch's `SyncBatchNorm`): while `sum` is set, every batch-norm layer of
/// a training forward normalises with the mean and variance of the global batch (its per-channel sums added over
/// the ranks), and its backward adds the ranks' Σdy and Σdy·x̂ likewise, so N ranks compute what one process
/// computes on the whole batch. Set by the data-parallel trainer for the process's one training run (`--sync-bn`),
/// nil otherwise; the arithmetic is plain Swift in Float64 over NCHW, not oneDNN's primitive.
public enum SynchronizedBatchNorm {
    // nonisolated(unsafe): set by `train` before the first step and cleared after the last, on the training
    // thread; the layers read it only inside the steps, on that same thread.
    nonisolated(unsafe) public static var sum: BatchStatisticsSum?
}

/// What a synchronised batch-norm forward keeps for its backward.
struct SynchronizedStatistics {
    let mean: [Double]
    let inverseDeviation: [Double]
    /// Values per channel over all ranks.
    let count: Double
    let sum: BatchStatisticsSum
}

extension BatchNorm2d {
    /// Normalises plain NCHW `x` with the global batch's statistics and updates the running ones.
    func synchronizedForward(_ x: Tensor, sum: @escaping BatchStatisticsSum) throws
        -> (output: Tensor, statistics: SynchronizedStatistics)
    {
        let s = x.shape
        let (batch, plane) = (s[0], s[2] * s[3])
        var sums = x.withStorage { values in
            channelSums(batch: batch, plane: plane) { _, i in
                let v = Double(values[i])
                return (v, v * v)
            }
        }
        sums.append(Double(batch * plane))
        try sum(&sums)
        let count = sums[2 * channels]
        let mean = (0..<channels).map { sums[$0] / count }
        let variance = (0..<channels).map { max(sums[channels + $0] / count - mean[$0] * mean[$0], 0) }
        let inverse = variance.map { 1 / ($0 + Double(epsilon)).squareRoot() }
        let output = try Tensor(desc: x.desc)
        let (gamma, beta) = (weight.value, bias.value)
        x.withStorage { values in
            output.withStorage { out in
                concurrentForEach(0..<channels) { c in
                    let scale = inverse[c] * Double(gamma[c])
                    for n in 0..<batch {
                        let base = (n * channels + c) * plane
                        for p in 0..<plane {
                            out[base + p] = Float((Double(values[base + p]) - mean[c]) * scale + Double(beta[c]))
                        }
                    }
                }
            }
        }
        updateRunningStatistics(mean: mean.map(Float.init), variance: variance.map(Float.init), count: Int(count))
        return (output, SynchronizedStatistics(mean: mean, inverseDeviation: inverse, count: count, sum: sum))
    }

    /// For each channel c of a plain NCHW tensor [batch, channels, plane], the sums over its elements i of the two
    /// `terms(c, i)`: the first sums at 0..<channels, the second at channels..<2·channels. Channels in parallel.
    private func channelSums(batch: Int, plane: Int, _ terms: (Int, Int) -> (Double, Double)) -> [Double] {
        var sums = [Double](repeating: 0, count: 2 * channels)
        sums.withUnsafeMutableBufferPointer { sums in
            let sums = sums
            concurrentForEach(0..<channels) { c in
                var first = 0.0
                var second = 0.0
                for n in 0..<batch {
                    let base = (n * channels + c) * plane
                    for i in base..<(base + plane) {
                        let (a, b) = terms(c, i)
                        first += a
                        second += b
                    }
                }
                (sums[c], sums[channels + c]) = (first, second)
            }
        }
        return sums
    }

    /// dLoss/dx for plain NCHW `dy` and `x`, accumulating this rank's γ and β gradients (Σdy·x̂, Σdy).
    func synchronizedBackward(_ dy: Tensor, x: Tensor, _ statistics: SynchronizedStatistics) throws -> Tensor {
        let s = x.shape
        let (batch, plane) = (s[0], s[2] * s[3])
        let (mean, inverse) = (statistics.mean, statistics.inverseDeviation)
        var sums = x.withStorage { values in
            dy.withStorage { g in
                channelSums(batch: batch, plane: plane) { c, i in
                    let d = Double(g[i])
                    return (d, d * (Double(values[i]) - mean[c]) * inverse[c])
                }
            }
        }
        weight.gradient.withUnsafeMutableBufferPointer { w in
            bias.gradient.withUnsafeMutableBufferPointer { b in
                for c in 0..<channels {
                    w[c] += Float(sums[channels + c])
                    b[c] += Float(sums[c])
                }
            }
        }
        try statistics.sum(&sums)
        let count = statistics.count
        let output = try Tensor(desc: x.desc)
        let gamma = weight.value
        x.withStorage { values in
            dy.withStorage { g in
                output.withStorage { out in
                    concurrentForEach(0..<channels) { c in
                        let scale = Double(gamma[c]) * inverse[c]
                        let (meanGradient, meanProduct) = (sums[c] / count, sums[channels + c] / count)
                        for n in 0..<batch {
                            let base = (n * channels + c) * plane
                            for p in 0..<plane {
                                let normalized = (Double(values[base + p]) - mean[c]) * inverse[c]
                                out[base + p] = Float(
                                    scale * (Double(g[base + p]) - meanGradient - normalized * meanProduct))
                            }
                        }
                    }
                }
            }
        }
        return output
    }
}
