import Foundation
import SliceLabSupport
import TestSupport
import Testing

@testable import DeepLab

/// The int8 arithmetic a quantised unit asks oneDNN for, emulated in float64 on any CPU: the input rounded
/// (half to even, as oneDNN's reorders round) with the scale the path uses and saturated to u8 or s8, the
/// batch-norm-folded weights rounded per output channel and saturated to s8, products summed exactly, the bias
/// added, and the sum scaled back to f32 before the residual and the activation.
///
/// `sevenBit` emulates the path of CPUs without VNNI, where u8 inputs are quantised with half the checkpoint's
/// scale (`Int8Convolution.effectiveInputScale`); otherwise the full 8-bit path of VNNI CPUs. The identity of a
/// residual block is added in f32 here (oneDNN adds it quantised at the block's entry), so the emulation holds
/// each unit's own rounding, not the chaining of quantised outputs between units.
final class EmulatedInt8Convolution: ConvolutionStrategy {
    let quantization: UnitQuantization
    let sevenBit: Bool

    init(_ quantization: UnitQuantization, sevenBit: Bool) {
        (self.quantization, self.sevenBit) = (quantization, sevenBit)
    }

    func applies(to unit: ConvUnit, inputShape: [Int], residual: Bool, training: Bool) -> Bool { !training }

    func inferenceForward(
        _ unit: ConvUnit, _ x: Tensor, residual: Tensor?,
        consumingResidual: Bool
    ) throws -> Tensor {
        let q = quantization
        let scale = Double(q.inputType == .u8 && sevenBit ? q.inputScale / 2 : q.inputScale)
        let (low, high): (Double, Double) = q.inputType == .u8 ? (0, 255) : (-128, 127)
        let input = try x.floatTensor()
        let xq = input.values.map { min(high, max(low, (Double($0) * scale).rounded(.toNearestOrEven))) }
        let (w, b) = unit.foldedPlainWeights()
        let conv = unit.conv
        let window = conv.window
        let (o, k, groups) = (conv.outputChannels, window.kernel, conv.groups)
        let perChannel = w.count / o
        let wq = w.indices.map { i in
            min(127, max(-128, (Double(w[i]) * Double(q.weightScales[i / perChannel])).rounded(.toNearestOrEven)))
        }
        let s = input.shape
        let out = conv.outputDims(s)
        let (n, c, h, width, oh, ow) = (s[0], s[1], s[2], s[3], out[2], out[3])
        let (cg, og) = (c / groups, o / groups)
        var y = [Float](repeating: 0, count: out.reduce(1, *))
        let r = try residual?.floatTensor().values
        // Unsafe buffers: the test target builds without optimisation, and this loop is the model's every unit.
        xq.withUnsafeBufferPointer { xq in
            wq.withUnsafeBufferPointer { wq in
                y.withUnsafeMutableBufferPointer { y in
                    for image in 0..<n {
                        for channel in 0..<o {
                            let g = channel / og
                            let outputScale = scale * Double(q.weightScales[channel])
                            var sums = [Double](repeating: 0, count: oh * ow)
                            for ci in 0..<cg {
                                let plane = (image * c + g * cg + ci) * h * width
                                for i in 0..<k {
                                    for j in 0..<k {
                                        let weight = wq[((channel * cg + ci) * k + i) * k + j]
                                        guard weight != 0 else { continue }
                                        for yy in 0..<oh {
                                            let iy = yy * window.stride - window.padding + i * window.dilation
                                            guard iy >= 0, iy < h else { continue }
                                            for xx in 0..<ow {
                                                let ix = xx * window.stride - window.padding + j * window.dilation
                                                guard ix >= 0, ix < width else { continue }
                                                sums[yy * ow + xx] += xq[plane + iy * width + ix] * weight
                                            }
                                        }
                                    }
                                }
                            }
                            for p in 0..<(oh * ow) {
                                let index = (image * o + channel) * oh * ow + p
                                var v = sums[p] / outputScale + Double(b[channel]) + Double(r?[index] ?? 0)
                                switch unit.activation {
                                case .none: break
                                case .relu: v = max(0, v)
                                case .relu6: v = min(6, max(0, v))
                                }
                                y[index] = Float(v)
                            }
                        }
                    }
                }
            }
        }
        return try Tensor(plain: out, values: y)
    }

    func trainingForward(_ unit: ConvUnit, _ x: Tensor) throws -> (output: Tensor, saved: SavedConvolution) {
        throw DeepLabError.invalidInput("emulated int8 runs in eval mode only")
    }

    func backward(
        _ unit: ConvUnit, _ dy: Tensor, saved: SavedConvolution,
        needsInputGradient: Bool
    ) throws -> Tensor? { nil }

    func releaseInferenceWeights() {}
}

/// The whole int8 forward emulated for both input paths (7-bit u8 without VNNI, 8-bit with it) against the
/// float32 model, under the bounds the native int8 forward is held to (`QuantizationTests.logitBounds`), so a
/// calibration whose scales only one path tolerates fails on every CPU. Issue #40: entropy thresholds clipped
/// 8-bit inputs so hard (relative L2 error 0.41 on ResNet-18) that only the 7-bit path, whose u8 saturation at
/// 255 leaves twice the calibrated range, stayed within 0.15.
@Suite(.serialized) struct Int8EmulationTests {
    @Test(arguments: QuantizationTests.logitBounds)
    func bothInputPathsFollowFloat32(
        architecture: DeepLabConfiguration.Architecture, method: CalibrationMethod,
        bound: Double
    ) throws {
        let model = try QuantizationTests.model(architecture)
        let input = QuantizationTests.inputs(count: 6)[5]
        let reference = try model.forward(input, training: false)
        let quantization = try QuantizationTests.quantized(model, method: method)
        let original = model.convUnits.map(\.strategies)
        defer { for (unit, strategies) in zip(model.convUnits, original) { unit.strategies = strategies } }
        for sevenBit in [true, false] {
            for (unit, strategies) in zip(model.convUnits, original) {
                unit.strategies =
                    quantization.units[unit.name].map {
                        [EmulatedInt8Convolution($0, sevenBit: sevenBit)]
                    } ?? strategies
            }
            let emulated = try model.forward(input, training: false)
            let relative = QuantizationTests.relativeL2(emulated.values, reference.values)
            #expect(relative > 0)
            #expect(relative <= bound, "\(architecture) \(method) \(sevenBit ? "7" : "8")-bit: \(relative)")
        }
    }

    /// The emulation is what oneDNN computes: one unit on this CPU's native path against it.
    @Test(arguments: [(3, 1, QuantizedType.u8), (1, 1, .u8), (3, 8, .u8), (3, 1, .s8)])
    func emulationMatchesTheNativeUnit(kernel: Int, groups: Int, type: QuantizedType) throws {
        var generator = SeededGenerator(seed: 7)
        let (c, o, h, w) = (groups > 1 ? 8 : 32, groups > 1 ? 8 : 16, 9, 11)
        let unit = ConvUnit(
            "unit", nil, inputChannels: c, outputChannels: o, kernelSize: kernel, stride: 1,
            padding: kernel / 2, groups: groups, bias: true, activation: .relu6,
            generator: &generator)
        let xs = (0..<(c * h * w)).map { i -> Float in
            let v = Float(sin(Double(i) * 0.37)) * 3
            return type == .u8 ? abs(v) : v
        }
        // A scale that puts some inputs above the calibrated range (saturated to the type's largest value).
        let q = UnitQuantization(
            inputType: type, inputScale: type.levels / 2.5, weightScales: Calibrator.weightScales(unit))
        let x = try Tensor(plain: [1, c, h, w], values: xs)
        let emulated = try unit(
            x, training: false,
            strategy: EmulatedInt8Convolution(q, sevenBit: !Int8Operations.hasVNNI)
        )
        .floatTensor().values
        unit.quantization = q
        let native = try unit(x, training: false).floatTensor().values
        let largest = emulated.map(abs).max()!
        let difference = zip(native, emulated).map { abs($0 - $1) }.max()!
        // s8 inputs without VNNI: oneDNN halves the weights itself (one bit fewer, see QuantizationTests).
        let tolerance: Float = type == .s8 && !Int8Operations.hasVNNI ? 0.02 : 1e-5
        #expect(difference <= tolerance * largest, "k\(kernel) g\(groups) \(type): |Δ| \(difference) of \(largest)")
    }
}
