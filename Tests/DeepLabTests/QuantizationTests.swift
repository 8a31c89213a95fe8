import DeepLabTestSupport
import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

@testable import DeepLab

/// int8 post-training quantisation in the engine: calibration, the checkpoint's `/quantization` group, and
/// int8 inference on oneDNN against the float32 model it came from.
@Suite(.serialized) struct QuantizationTests {
    static func model(
        _ architecture: DeepLabConfiguration.Architecture, decoder: DeepLabConfiguration.Decoder = .v3
    ) throws -> DeepLabV3 {
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: architecture, decoder: decoder, classCount: 3, inputChannels: 1,
                outputStride: 8, atrousRates: [2, 4], asppChannels: 16,
                widthMultiplier: 0.35, seed: 1))
        DeterministicWeights.fill(model)
        return model
    }

    /// Smooth inputs (a blurred hash), so that activations look like an image's rather than noise.
    static func inputs(count: Int, rows: Int = 33, columns: Int = 41) -> [FloatTensor] {
        (0..<count).map { i in
            let noise = DeterministicWeights.uniform(rows * columns, salt: 1000 + UInt64(i))
            var values = [Float](repeating: 0, count: rows * columns)
            for y in 0..<rows {
                for x in 0..<columns {
                    let wave = sin(Double(x + 3 * i) / 5) * cos(Double(y) / 7)
                    values[y * columns + x] = Float(wave + 0.2 * noise[y * columns + x])
                }
            }
            return FloatTensor(shape: [1, 1, rows, columns], values: values)
        }
    }

    /// ‖a − b‖ / ‖b‖ in float64.
    static func relativeL2(_ a: [Float], _ b: [Float]) -> Double {
        let difference = zip(a, b).map { Double($0 - $1) * Double($0 - $1) }.reduce(0, +)
        return (difference / b.map { Double($0) * Double($0) }.reduce(0, +)).squareRoot()
    }

    static func quantized(_ model: DeepLabV3, method: CalibrationMethod) throws -> ModelQuantization {
        let calibrator = try Calibrator(model: model, method: method)
        for input in inputs(count: 4) { try calibrator.observe(input) }
        return try calibrator.quantization(calibrationSet: "test-inputs", split: "train", caseCount: 4)
    }

    /// Bounds on the relative L2 error of the logits, measured on AVX2 (ResNet-18: 0.025 min/max, 0.025
    /// percentile, 0.086 entropy; MobileNetV2 ×0.35: 0.20 and 0.17; its entropy calibration, 0.59 on these
    /// untrained weights, is not bounded here) with some margin.
    static let logitBounds: [(DeepLabConfiguration.Architecture, CalibrationMethod, Double)] = [
        (.resnet18, .minmax, 0.05), (.resnet18, .percentile, 0.05), (.resnet18, .entropy, 0.15),
        (.mobilenetV2, .minmax, 0.3), (.mobilenetV2, .percentile, 0.3)
    ]

    /// DeepLabV3+ (separable ASPP, the low-level path and its f32 stride-4 feature), bounds from the errors measured
    /// natively on AMX and capped to AVX512_CORE_VNNI and AVX2 (ResNet-18 percentile 0.093, 0.093, 0.093; min/max
    /// 0.087, 0.087, 0.082; MobileNetV2 ×0.35 percentile 0.078, 0.078, 0.105) with some margin.
    static let v3plusLogitBounds: [(DeepLabConfiguration.Architecture, CalibrationMethod, Double)] = [
        (.resnet18, .percentile, 0.15), (.resnet18, .minmax, 0.15), (.mobilenetV2, .percentile, 0.15)
    ]

    @Test(arguments: logitBounds)
    func int8LogitsFollowFloat32(
        architecture: DeepLabConfiguration.Architecture, method: CalibrationMethod,
        bound: Double
    ) throws {
        try expectInt8LogitsFollowFloat32(Self.model(architecture), method: method, bound: bound)
    }

    @Test(arguments: v3plusLogitBounds)
    func int8DeepLabV3PlusLogitsFollowFloat32(
        architecture: DeepLabConfiguration.Architecture, method: CalibrationMethod,
        bound: Double
    ) throws {
        try expectInt8LogitsFollowFloat32(Self.model(architecture, decoder: .v3plus), method: method, bound: bound)
    }

    private func expectInt8LogitsFollowFloat32(_ model: DeepLabV3, method: CalibrationMethod, bound: Double) throws {
        let architecture = model.configuration.architecture
        let input = Self.inputs(count: 6)[5]  // not among the calibration inputs
        let reference = try model.forward(input, training: false)
        let quantization = try Self.quantized(model, method: method)
        try model.apply(quantization)
        #expect(model.precision == .int8)
        let int8 = try model.forward(input, training: false)
        // The int8 path runs (its logits are not the float32 ones) and stays close to them in the relative
        // L2 norm. These formula-weight models are not trained, so a single logit can move further (the trained
        // bundled model's labels are checked end to end in QuantizeCommandTests).
        let difference = zip(int8.values, reference.values).map { Double($0 - $1) * Double($0 - $1) }.reduce(0, +)
        let norm = reference.values.map { Double($0) * Double($0) }.reduce(0, +)
        let relative = (difference / norm).squareRoot()
        #expect(difference > 0)
        #expect(relative <= bound, "\(architecture) \(method): relative L2 error \(relative)")
        print("int8 \(architecture) \(model.configuration.decoder) \(method): relative L2 error \(relative)")
        try model.apply(nil)
        #expect(try model.forward(input, training: false) == reference)
    }

    /// One unit's int8 output against float64 arithmetic on the same quantised input and weights: u8 inputs
    /// (7 bits without VNNI) must match to float32 rounding; s8 inputs within 2 % of the largest output, since
    /// without VNNI oneDNN halves the s8 weights (one bit fewer) to keep its 16-bit pair sums from saturating.
    @Test(arguments: [(1, 1, QuantizedType.u8), (3, 1, .u8), (3, 8, .u8), (1, 1, .s8), (3, 8, .s8)])
    func int8UnitMatchesAQuantisedReference(kernel: Int, groups: Int, type: QuantizedType) throws {
        var generator = SeededGenerator(seed: 3)
        let (c, o, h, w) = (groups > 1 ? 8 : 48, groups > 1 ? 8 : 24, 9, 11)
        let unit = ConvUnit(
            "unit", nil, inputChannels: c, outputChannels: o, kernelSize: kernel,
            padding: kernel / 2, groups: groups, bias: true, activation: .none,
            generator: &generator)
        let bias = try #require(unit.conv.bias)
        bias.value = (0..<o).map { Float($0) * 0.1 - 0.3 }
        bias.markUpdated()
        let xs = (0..<(c * h * w)).map { i -> Float in
            let v = Float(sin(Double(i) * 0.37)) * 3
            return type == .u8 ? abs(v) : v
        }
        let weights = unit.conv.weight.value
        let perChannel = weights.count / o
        let weightScales = (0..<o).map { k in 127 / weights[(k * perChannel)..<((k + 1) * perChannel)].map(abs).max()! }
        let q = UnitQuantization(inputType: type, inputScale: type.levels / 3, weightScales: weightScales)
        unit.quantization = q
        let y = try unit(Tensor(plain: [1, c, h, w], values: xs), training: false).floatTensor()

        let s = Int8Convolution.effectiveInputScale(q)
        let xq = xs.map { Double(max(type == .u8 ? 0 : -128, min(type == .u8 ? 255 : 127, ($0 * s).rounded())) / s) }
        let wq = weights.indices.map { i in
            Double((weights[i] * weightScales[i / perChannel]).rounded() / weightScales[i / perChannel])
        }
        let (cg, og, p) = (c / groups, o / groups, kernel / 2)
        var difference = 0.0
        var largest = 0.0
        for k in 0..<o {
            for yy in 0..<h {
                for xx in 0..<w {
                    var sum = Double(bias.value[k])
                    for ci in 0..<cg {
                        for i in 0..<kernel {
                            for j in 0..<kernel {
                                let (iy, ix) = (yy - p + i, xx - p + j)
                                guard iy >= 0, iy < h, ix >= 0, ix < w else { continue }
                                sum +=
                                    xq[(((k / og) * cg + ci) * h + iy) * w + ix]
                                    * wq[((k * cg + ci) * kernel + i) * kernel + j]
                            }
                        }
                    }
                    difference = max(difference, abs(sum - Double(y.values[(k * h + yy) * w + xx])))
                    largest = max(largest, abs(sum))
                }
            }
        }
        let tolerance = type == .u8 ? 1e-5 : 0.02
        #expect(difference <= tolerance * largest, "k\(kernel) g\(groups) \(type): |Δ| \(difference) of \(largest)")
    }

    /// A block's last unit with its identity in u8 (quantised at the block's entry) against float64 arithmetic
    /// on the same quantised values: act(conv + identity) written as u8 for the next block (a scaled `sum`
    /// post-op adds the identity's integers), or as f32 (the identity dequantised into the destination first).
    /// The u8 output may differ by one quantisation step where float32 and float64 round a half differently.
    @Test(arguments: [true, false])
    func int8ResidualSumMatchesAQuantisedReference(quantizedOutput: Bool) throws {
        var generator = SeededGenerator(seed: 5)
        let (c, h, w) = (32, 7, 9)
        let unit = ConvUnit(
            "unit", nil, inputChannels: c, outputChannels: c, kernelSize: 1, bias: true,
            activation: .relu, generator: &generator)
        let bias = try #require(unit.conv.bias)
        bias.value = (0..<c).map { Float($0 % 7) * 0.1 - 0.3 }
        bias.markUpdated()
        let xs = (0..<(c * h * w)).map { abs(Float(sin(Double($0) * 0.37)) * 3) }
        let rs = (0..<(c * h * w)).map { abs(Float(cos(Double($0) * 0.23)) * 2) }
        let weights = unit.conv.weight.value
        let weightScales = (0..<c).map { k in 127 / weights[(k * c)..<((k + 1) * c)].map(abs).max()! }
        let q = UnitQuantization(inputType: .u8, inputScale: 255 / 3, weightScales: weightScales)
        let residualQ = UnitQuantization(inputType: .u8, inputScale: 255 / 2, weightScales: [])
        let outputQ = UnitQuantization(inputType: .u8, inputScale: 255 / 4, weightScales: [])
        unit.quantization = q
        unit.quantizedResidual = residualQ
        unit.quantizedOutput = quantizedOutput ? outputQ : nil
        let (s, sr, so) = (
            Int8Convolution.effectiveInputScale(q), Int8Convolution.effectiveInputScale(residualQ),
            Int8Convolution.effectiveInputScale(outputQ)
        )
        let residual = try Int8Operations.quantize(Tensor(plain: [1, c, h, w], values: rs), to: .u8, scale: sr)
        let y = try unit(Tensor(plain: [1, c, h, w], values: xs), residual: residual, training: false)
        #expect(Int8Operations.isQuantized(y) == quantizedOutput)
        let values: [Float]
        if quantizedOutput {
            let plain = try Tensor(desc: .make([1, c, h, w], MemoryDesc.plainTag(rank: 4)))
            try Int8Operations.dequantize(y, into: plain, scale: so)
            values = try plain.floatTensor().values
        } else {
            values = try y.floatTensor().values
        }
        func quantized(_ v: Float, _ scale: Float) -> Double { Double(max(0, min(255, (v * scale).rounded())) / scale) }
        var difference = 0.0
        var largest = 0.0
        for k in 0..<c {
            let wq = (0..<c).map { i in Double((weights[k * c + i] * weightScales[k]).rounded() / weightScales[k]) }
            for p in 0..<(h * w) {
                var sum = Double(bias.value[k]) + quantized(rs[k * h * w + p], sr)
                for i in 0..<c { sum += quantized(xs[i * h * w + p], s) * wq[i] }
                sum = max(0, sum)
                let expected = quantizedOutput ? min(255, (sum * Double(so)).rounded()) / Double(so) : sum
                difference = max(difference, abs(expected - Double(values[k * h * w + p])))
                largest = max(largest, sum)
            }
        }
        let tolerance = quantizedOutput ? 1.001 / Double(so) : 1e-5 * largest
        #expect(largest > 0)
        #expect(difference <= tolerance, "quantised output \(quantizedOutput): |Δ| \(difference) of \(largest)")
    }

    /// Which units write their output quantised for the next: inside every chain of the backbone and of
    /// DeepLabV3+'s head (a separable convolution's linear depthwise output in s8 for its pointwise unit),
    /// MobileNetV2's stem for the first block's entry, its last block for its 1 × 1 head and that head for the
    /// ASPP's entry (whose image pooling then averages the quantised feature); the logits then stay what
    /// quantising between the units gives, up to a half rounded the other way in a few values.
    @Test func quantisedOutputsFollowTheChains() throws {
        let model = try Self.model(.mobilenetV2, decoder: .v3plus)
        let input = Self.inputs(count: 6)[5]
        let quantization = try Self.quantized(model, method: .percentile)
        try model.apply(quantization)
        let chained = try model.forward(input, training: false)
        let head = model.head
        let separable = head.unitChains.filter { $0.count == 2 && $0[0].conv.groups > 1 }
        #expect(separable.count == 4)  // the two dilated ASPP branches, the 3 × 3 after ASPP, the decoder's
        for chain in separable {
            #expect(chain[0].activation == .none && chain[1].quantization?.inputType == .s8)
            #expect(chain[0].quantizedOutput == chain[1].quantization, "\(chain[0].name)")
        }
        let backbone = try #require(model.backbone as? MobileNetV2)
        #expect(backbone.stem.quantizedOutput != nil)
        #expect(backbone.stem.quantizedOutput == backbone.blocks[0].entryQuantization)
        let lastBlockOutput = try #require(backbone.blocks.last?.units.last)
        #expect(lastBlockOutput.quantizedOutput != nil)
        #expect(lastBlockOutput.quantizedOutput == backbone.head.quantization)
        #expect(backbone.head.quantizedOutput != nil)
        #expect(backbone.head.quantizedOutput == head.aspp.entryQuantization)
        // The head goes on writing the ASPP's input: its image pooling then averages the quantised feature, which
        // is more than a rounding away from the f32 feature's mean (below VNNI, u8 at half scale, 1.6 % in relative
        // L2 on these untrained weights); `quantizedGlobalAveragePoolingIsThePoolingOfTheDequantisedFeature` holds
        // that branch, `Benchmarks/int8_accuracy.py` the trained models' labels.
        for unit in separable.map({ $0[0] }) + [backbone.stem, lastBlockOutput] { unit.quantizedOutput = nil }
        let separate = try model.forward(input, training: false)
        let scale = separate.values.map(abs).max() ?? 0
        let difference = zip(chained.values, separate.values).map { abs($0 - $1) }.max() ?? .infinity
        #expect(scale > 0 && difference <= 0.05 * scale, "max |Δ| \(difference) of \(scale)")
        #expect(Self.relativeL2(chained.values, separate.values) < 0.01)
    }

    /// The image pooling of a quantised feature (u8 and s8, a batch of two, odd sizes; a feature large enough that
    /// the compute threads sum parts of it): its integer means dequantised are the means of the feature dequantised
    /// (summed in Float64) to float32 rounding, and oneDNN's average pooling of it within the rounding of a float32
    /// sum of its pixels.
    @Test(arguments: [QuantizedType.u8, .s8], [[2, 37, 5, 11], [2, 64, 41, 29]])
    func quantizedGlobalAveragePoolingIsThePoolingOfTheDequantisedFeature(_ type: QuantizedType, _ shape: [Int]) throws
    {
        let plane = shape[2] * shape[3]
        let values = (0..<shape.reduce(1, *)).map { i -> Float in
            // A mean per channel (i / plane: the channel and image) between −0.8 and 0.8 under the wave.
            let v = Float(sin(Double(i) * 0.61)) * 1.5 + Float(i / plane % 5) * 0.4 - 0.8
            return type == .u8 ? abs(v) : v
        }
        let scale: Float = type == .u8 ? 80 : 40
        let quantized = try Int8Operations.quantize(Tensor(plain: shape, values: values), to: type, scale: scale)
        let dequantized = try Tensor(desc: .make(shape, .channelsLast))
        try Int8Operations.dequantize(quantized, into: dequantized, scale: scale)
        let feature = try dequantized.floatTensor().values
        let means = (0..<(shape[0] * shape[1])).map { map in
            feature[(map * plane)..<((map + 1) * plane)].reduce(0) { $0 + Double($1) } / Double(plane)
        }
        let oneDNN = try Operations.globalAveragePool(dequantized, training: false).output.floatTensor()
        let pooled = try Int8Operations.globalAveragePool(quantized, scale: scale).floatTensor()
        #expect(pooled.shape == [shape[0], shape[1], 1, 1] && oneDNN.shape == pooled.shape)
        let largest = means.map(abs).max() ?? 0
        let exact = zip(pooled.values, means).map { abs(Double($0) - $1) }.max() ?? .infinity
        #expect(largest > 0.5 && exact <= 1e-6 * largest, "max |Δ| \(exact) of \(largest)")
        let peer = zip(pooled.values, oneDNN.values).map { abs(Double($0 - $1)) }.max() ?? .infinity
        #expect(peer <= Double(plane) * Double(Float.ulpOfOne) * largest, "oneDNN: max |Δ| \(peer) of \(largest)")
    }

    /// A dilated 3×3 int8 convolution (ASPP's) as padding-free rectangles gives exactly what the one padded int8
    /// convolution gives: the same integer sums over the taps inside the input (the others read only zeros),
    /// scaled and activated alike; u8 and s8 inputs, f32 and quantised outputs, rectangles of one to nine taps,
    /// a batch of two.
    @Test(arguments: [
        (rate: 6, rows: 13, columns: 17, batch: 2, type: QuantizedType.u8, quantizedOutput: true),
        (rate: 12, rows: 9, columns: 30, batch: 1, type: .s8, quantizedOutput: false),
        (rate: 5, rows: 8, columns: 7, batch: 1, type: .u8, quantizedOutput: false)
    ])
    func int8RectanglesGiveTheWholeConvolution(
        _ c: (
            rate: Int, rows: Int, columns: Int, batch: Int,
            type: QuantizedType, quantizedOutput: Bool
        )
    ) throws {
        var generator = SeededGenerator(seed: 9)
        let (channels, outputs) = (24, 16)
        let unit = ConvUnit(
            "aspp", "bn", inputChannels: channels, outputChannels: outputs, kernelSize: 3,
            padding: c.rate, dilation: c.rate, activation: .relu, generator: &generator)
        let norm = try #require(unit.norm)
        norm.bias.value = (0..<outputs).map { 0.1 * Float($0 % 3) - 0.1 }
        norm.runningVariance.value = (0..<outputs).map { 0.5 + 0.1 * Float($0) }
        let shape = [c.batch, channels, c.rows, c.columns]
        #expect(PaddingFreeConvolution.plan(for: unit, inputShape: shape) != nil)
        let xs = (0..<shape.reduce(1, *)).map { i -> Float in
            let v = Float(sin(Double(i) * 0.37)) * 3
            return c.type == .u8 ? abs(v) : v
        }
        let (w, _) = unit.foldedPlainWeights()
        let perChannel = w.count / outputs
        unit.quantization = UnitQuantization(
            inputType: c.type, inputScale: c.type.levels / 3,
            weightScales: (0..<outputs).map { k in 127 / w[(k * perChannel)..<((k + 1) * perChannel)].map(abs).max()! })
        unit.quantizedOutput =
            c.quantizedOutput
            ? UnitQuantization(
                inputType: .u8, inputScale: 255 / 4,
                weightScales: []) : nil
        let rectangles = try unit(
            Tensor(plain: shape, values: xs), training: false,
            strategy: Int8Convolution(rectangles: true)
        ).floatTensor()
        let whole = try unit(
            Tensor(plain: shape, values: xs), training: false,
            strategy: Int8Convolution(rectangles: false)
        ).floatTensor()
        #expect(rectangles.shape == whole.shape)
        #expect(whole.values.contains { $0 != 0 })
        #expect(rectangles.values == whole.values, "rate \(c.rate) on \(c.rows) × \(c.columns), \(c.type)")
    }

    /// Blocks hand int8 activations to each other where the next block alone reads them: not across a
    /// downsample's f32 identity, not out of the blocks whose outputs are the heads' features.
    @Test func blocksPassInt8OutputsExceptAtFeaturesAndDownsamples() throws {
        let model = try Self.model(.resnet18)
        try model.apply(try Self.quantized(model, method: .percentile))
        let resnet = try #require(model.backbone as? ResNet)
        let blocks = Array(resnet.stages.joined())
        #expect(blocks.allSatisfy { $0.entryQuantization != nil })
        #expect(blocks[0].units.last?.quantizedOutput != nil)  // layer1.0 → layer1.1
        #expect(blocks[0].units.last?.quantizedResidual != nil)
        #expect(blocks[2].units.last?.quantizedResidual == nil)  // layer2.0 adds its downsample's f32 output
        #expect(blocks[2].units.last?.quantizedOutput == nil)
        #expect(blocks[5].units.last?.quantizedOutput == nil)  // layer3.1: the auxiliary feature
        #expect(blocks[7].units.last?.quantizedOutput == nil)  // layer4.1: the main feature
        try model.apply(nil)
        #expect(blocks.allSatisfy { $0.entryQuantization == nil && $0.units.last?.quantizedOutput == nil })
    }

    @Test func unitsAfterReLUAreUnsignedAndTheClassifierStaysFloat() throws {
        let model = try Self.model(.resnet18)
        let q = try Self.quantized(model, method: .minmax)
        #expect(q.units["backbone.conv1"]?.inputType == .s8)  // the normalised image has negative values
        #expect(q.units["backbone.layer1.0.conv1"]?.inputType == .u8)  // after ReLU and max pooling
        #expect(q.units["classifier.4"] == nil)
        #expect(q.floatUnits.contains("classifier.4"))
        // Per-output-channel weight scales: 127 over each channel's largest folded weight.
        let scales = try #require(q.units["backbone.layer1.0.conv1"]?.weightScales)
        #expect(scales.count == 64)
        #expect(Set(scales).count > 1)
    }

    @Test func quantisedCheckpointStoresItsScalesAndLoadsAsInt8() throws {
        let folder = try TestSupport.temporaryFolder("quantization")
        defer { try? FileManager.default.removeItem(at: folder) }
        let model = try Self.model(.mobilenetV2)
        let quantization = try Self.quantized(model, method: .entropy)
        try model.apply(quantization)
        let path = folder.appendingPathComponent("int8.h5").path
        try DeepLabCheckpoint.save(model, preprocessing: .minMax, to: path)

        let file = try HDF5File.open(path)
        #expect(try file.attribute("method", at: "/quantization").stringValue == "entropy")
        #expect(try file.attribute("calibration_set", at: "/quantization").stringValue == "test-inputs")
        #expect(try file.attribute("slices", at: "/quantization").doubleValues == [4])
        let scales = try file.read("/quantization/backbone.0.0/weight_scales", as: Float.self)
        #expect(scales.values == quantization.units["backbone.0.0"]?.weightScales)
        #expect(try DeepLabCheckpoint.isQuantized(path))

        let (loaded, _) = try DeepLabCheckpoint.load(path)
        #expect(loaded.precision == .int8)
        #expect(loaded.quantization == quantization)
        let input = Self.inputs(count: 1)[0]
        #expect(try loaded.forward(input, training: false) == (try model.forward(input, training: false)))
    }

    @Test func calibrationWithoutSlicesIsAnError() throws {
        let model = try Self.model(.mobilenetV2)
        let calibrator = try Calibrator(model: model, method: .percentile)
        #expect(throws: DeepLabError.invalidInput("calibration saw no slices: the calibration set is empty")) {
            try calibrator.quantization(calibrationSet: "none", split: "train", caseCount: 0)
        }
    }

    @Test func entropyThresholdClipsALongTailAndMinMaxDoesNot() {
        // 10 000 magnitudes near 1 and one outlier at 100: min/max keeps the outlier, entropy and the
        // percentile clip it.
        var s = Calibrator.Statistics()
        s.add((0..<10_000).map { Float($0 % 100) / 100 } + [100])
        #expect(Calibrator.threshold(s, method: .minmax, levels: 256) == 100)
        #expect(Calibrator.threshold(s, method: .percentile, levels: 256) < 2)
        #expect(Calibrator.threshold(s, method: .entropy, levels: 256) < 20)
    }

    /// A ReLU's output, half exact zeros and the rest spread evenly over (0, 1]: zeros quantise exactly at any
    /// threshold, so the entropy search keeps the whole range. Counted in bin 0 they made the narrowest
    /// candidate (an eighth of the range for u8) win and clipped 8-bit inputs hard (issue #40).
    @Test func entropyThresholdIgnoresExactZeros() {
        var s = Calibrator.Statistics()
        s.add([Float](repeating: 0, count: 20_000) + (1...20_000).map { Float($0) / 20_000 })
        #expect(s.zeroCount == 20_000)
        #expect(Calibrator.threshold(s, method: .entropy, levels: 256) > 0.9)
    }
}
