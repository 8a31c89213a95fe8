import Foundation

/// Post-training calibration: runs a float32 model over calibration slices, collects every quantised unit's
/// input statistics, and turns them into a `ModelQuantization` (activation scales by `method`, per-output-channel
/// s8 weight scales from the batch-norm-folded weights).
///
/// Each unit keeps its inputs' minimum and a 2048-bin histogram of their magnitudes over [0, range], the range
/// doubling (pairs of bins merged) whenever a larger magnitude arrives, so one pass serves every method.
/// A unit whose inputs were never negative gets u8 (the inputs after ReLU), the others s8.
public final class Calibrator {
    public let method: CalibrationMethod
    private let model: DeepLabV3
    private(set) var statistics: [String: Statistics] = [:]
    /// Slices observed so far.
    public private(set) var sliceCount = 0

    static let binCount = 2048

    struct Statistics {
        var minimum = Float.infinity
        var maximumMagnitude: Float = 0
        var range: Float = 0
        /// Magnitudes by bin, exact zeros included (in bin 0).
        var histogram = [Double](repeating: 0, count: Calibrator.binCount)
        /// How many of the values were exactly zero (a ReLU's output is mostly zeros).
        var zeroCount = 0.0

        mutating func add(_ values: [Float]) {
            var low = Float.infinity
            var high: Float = 0
            for v in values {
                low = min(low, v)
                high = max(high, abs(v))
            }
            minimum = min(minimum, low)
            maximumMagnitude = max(maximumMagnitude, high)
            if range == 0 { range = max(high, Float.leastNormalMagnitude) }
            while high > range {  // double the range: bin pairs merge
                for i in 0..<(Calibrator.binCount / 2) { histogram[i] = histogram[2 * i] + histogram[2 * i + 1] }
                for i in (Calibrator.binCount / 2)..<Calibrator.binCount { histogram[i] = 0 }
                range *= 2
            }
            let perBin = Float(Calibrator.binCount) / range
            var zeros = 0
            histogram.withUnsafeMutableBufferPointer { h in
                for v in values {
                    h[min(Int(abs(v) * perBin), Calibrator.binCount - 1)] += 1
                    if v == 0 { zeros += 1 }
                }
            }
            zeroCount += Double(zeros)
        }
    }

    /// Installs the observers on every unit that will be quantised.
    ///
    /// - Throws: `DeepLabError.invalidConfiguration` for a model that is already quantised.
    public init(model: DeepLabV3, method: CalibrationMethod) throws {
        guard model.quantization == nil else {
            throw DeepLabError.invalidConfiguration("the model is already quantised; calibrate its float32 checkpoint")
        }
        self.model = model
        self.method = method
        let kept = model.floatUnitNames
        for unit in model.convUnits where !kept.contains(unit.name) {
            let name = unit.name
            statistics[name] = Statistics()
            unit.inputObserver = { [unowned self] x in self.statistics[name]?.add(try x.floatTensor().values) }
        }
    }

    deinit {
        for unit in model.convUnits { unit.inputObserver = nil }
    }

    /// Runs the float32 model on one input [N, C, H, W] (eval mode), collecting statistics.
    public func observe(_ input: FloatTensor) throws {
        _ = try model.forward(input, training: false)
        sliceCount += input.shape[0]
    }

    /// The quantisation the statistics give, with its provenance.
    ///
    /// - Throws: `DeepLabError.invalidInput` when nothing was observed.
    public func quantization(calibrationSet: String, split: String, caseCount: Int) throws -> ModelQuantization {
        guard sliceCount > 0 else {
            throw DeepLabError.invalidInput("calibration saw no slices: the calibration set is empty")
        }
        var units: [String: UnitQuantization] = [:]
        for unit in model.convUnits {
            guard let s = statistics[unit.name] else { continue }
            let type: QuantizedType = s.minimum >= 0 ? .u8 : .s8
            let threshold = Calibrator.threshold(s, method: method, levels: Int(type.levels) + 1)
            let inputScale = threshold > 0 ? type.levels / threshold : 1
            units[unit.name] = UnitQuantization(
                inputType: type, inputScale: inputScale,
                weightScales: Calibrator.weightScales(unit))
        }
        let kept = model.convUnits.map(\.name).filter { model.floatUnitNames.contains($0) }
        return ModelQuantization(
            method: method, calibrationSet: calibrationSet, split: split, caseCount: caseCount,
            sliceCount: sliceCount, units: units, floatUnits: kept)
    }

    /// 127 / max |w[o]| per output channel of the folded weights (1 for an all-zero channel).
    static func weightScales(_ unit: ConvUnit) -> [Float] {
        let (weights, _) = unit.foldedPlainWeights()
        let outputs = unit.conv.outputChannels
        let perChannel = weights.count / outputs
        return (0..<outputs).map { o in
            let m = weights[(o * perChannel)..<((o + 1) * perChannel)].reduce(Float(0)) { max($0, abs($1)) }
            return m > 0 ? 127 / m : 1
        }
    }

    /// The largest share of an activation's non-zero values the entropy threshold may clip.
    static let clippingBudget = 1e-3

    /// The clipping threshold (a magnitude) for `method`; `levels` is the number of quantised magnitudes.
    static func threshold(_ s: Statistics, method: CalibrationMethod, levels: Int) -> Float {
        guard s.maximumMagnitude > 0 else { return 0 }
        let width = s.range / Float(binCount)
        switch method {
        case .minmax:
            return s.maximumMagnitude
        case .percentile:
            let total = s.histogram.reduce(0, +)
            var cumulative = 0.0
            for (i, count) in s.histogram.enumerated() {
                cumulative += count
                if cumulative >= 0.9999 * total { return min(Float(i + 1) * width, s.maximumMagnitude) }
            }
            return s.maximumMagnitude
        case .entropy:
            let used = min(binCount, Int((s.maximumMagnitude / width).rounded(.up)))
            guard used > levels else { return s.maximumMagnitude }
            // Exact zeros quantise to zero at any threshold, so they take no part in the divergence: left in bin 0
            // (half of a ReLU's outputs), merging them with their neighbours into Q's first level costs more
            // than any clipping, and the search ends at its narrowest candidate (pytorch-quantization's
            // `skip_zeros`).
            var histogram = s.histogram
            histogram[0] -= s.zeroCount
            // The divergence prices clipped values by their count in P's last bin, not by how far they are
            // clipped: on a trained MobileNetV2's depthwise ReLU6 outputs it chose thresholds of 1.0–1.5 (of 6)
            // that clip 2–4 % of the values and up to 11 % of their sum, which 8-bit (VNNI) inputs honour
            // (issue #40). So the search considers only thresholds that clip at most `clippingBudget` of the
            // non-zero values; a lone outlier (below that share) is still clipped.
            let budget = histogram.reduce(0, +) * Self.clippingBudget
            var narrowest = used
            var tail = 0.0
            while narrowest > levels, tail + histogram[narrowest - 1] <= budget {
                tail += histogram[narrowest - 1]
                narrowest -= 1
            }
            var best = (divergence: Double.infinity, bins: used)
            for bins in stride(from: levels, through: used, by: 2) where bins >= narrowest {
                let d = klDivergence(histogram, bins: bins, levels: levels)
                if d < best.divergence { best = (d, bins) }
            }
            return min(Float(best.bins) * width, s.maximumMagnitude)
        }
    }

    /// KL(P ‖ Q): P the first `bins` bins with the tail folded into the last, Q those bins merged into `levels`
    /// quantised bins and spread back over their non-empty members (TensorRT's entropy calibration).
    static func klDivergence(_ histogram: [Double], bins: Int, levels: Int) -> Double {
        var p = Array(histogram[0..<bins])
        p[bins - 1] += histogram[bins...].reduce(0, +)
        var q = [Double](repeating: 0, count: bins)
        let merged = Double(bins) / Double(levels)
        for j in 0..<levels {
            let start = Int(Double(j) * merged)
            let end = j == levels - 1 ? bins : Int(Double(j + 1) * merged)
            guard end > start else { continue }
            var total = 0.0
            var nonEmpty = 0
            for k in start..<end where histogram[k] > 0 {
                total += histogram[k]
                nonEmpty += 1
            }
            guard nonEmpty > 0 else { continue }
            for k in start..<end where histogram[k] > 0 { q[k] = total / Double(nonEmpty) }
        }
        let pSum = p.reduce(0, +)
        let qSum = q.reduce(0, +)
        guard pSum > 0, qSum > 0 else { return .infinity }
        var divergence = 0.0
        for k in 0..<bins where p[k] > 0 {
            let pk = p[k] / pSum
            let qk = max(q[k] / qSum, 1e-12)
            divergence += pk * log(pk / qk)
        }
        return divergence
    }
}
