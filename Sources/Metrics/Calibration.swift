import Foundation

/// How well a prediction's class probabilities are calibrated, one class against the rest, over a case's voxels.
///
/// For class c, each voxel has the predicted probability p of c and the outcome y = 1 when the reference is c:
/// - expected calibration error: voxels binned by p into `bins` equal-width bins over [0, 1] (p = 1 in the last),
///   Σ over bins of (voxels in the bin / N) · |mean y − mean p|;
/// - Brier score: mean (p − y)²;
/// - negative log-likelihood: mean −[y log p + (1 − y) log(1 − p)], p clipped to [10⁻⁷, 1 − 10⁻⁷];
/// - error detection AUROC: over the voxels predicted c (argmax), the area under the ROC curve of the predictive
///   entropy of the whole probability vector (natural log) as a detector of a wrong prediction (reference not c),
///   ties counted half; NaN when those voxels are all right or all wrong.
public struct ClassCalibration: Sendable, Equatable {
    public let expectedCalibrationError: Double
    public let brier: Double
    public let negativeLogLikelihood: Double
    public let errorDetectionAUROC: Double

    /// The clipping of probabilities inside the log-likelihood.
    public static let epsilon = 1e-7

    /// - Parameters:
    ///   - probabilities: [K, voxels] (the frames' [frames, K, H, W] as each frame's planes, see `CaseMetrics`).
    ///   - reference, prediction: labels per voxel.
    public init(
        classIndex c: Int, probabilities: (_ k: Int, _ voxel: Int) -> Float, classCount: Int, reference: [UInt16],
        prediction: [UInt16], bins: Int
    ) {
        let n = reference.count
        var (binCount, binOutcome, binProbability) = (
            [Int](repeating: 0, count: bins), [Double](repeating: 0, count: bins),
            [Double](repeating: 0, count: bins)
        )
        var (brier, nll) = (0.0, 0.0)
        var detections: [(entropy: Double, wrong: Bool)] = []
        for voxel in 0..<n {
            let p = Double(probabilities(c, voxel))
            let y = Int(reference[voxel]) == c ? 1.0 : 0.0
            let bin = min(bins - 1, max(0, Int(p * Double(bins))))
            binCount[bin] += 1
            binOutcome[bin] += y
            binProbability[bin] += p
            brier += (p - y) * (p - y)
            let clipped = min(max(p, Self.epsilon), 1 - Self.epsilon)
            nll -= y * Foundation.log(clipped) + (1 - y) * Foundation.log(1 - clipped)
            if Int(prediction[voxel]) == c {
                var entropy = 0.0
                for k in 0..<classCount {
                    let q = Double(probabilities(k, voxel))
                    if q > 0 { entropy -= q * Foundation.log(q) }
                }
                detections.append((entropy, y == 0))
            }
        }
        var ece = 0.0
        for bin in 0..<bins where binCount[bin] > 0 {
            let count = Double(binCount[bin])
            ece += count / Double(n) * abs(binOutcome[bin] / count - binProbability[bin] / count)
        }
        expectedCalibrationError = ece
        self.brier = brier / Double(n)
        negativeLogLikelihood = nll / Double(n)
        errorDetectionAUROC = Self.auroc(detections)
    }

    /// The Mann–Whitney area: the chance that a wrong voxel's entropy exceeds a right one's, ties counting half.
    static func auroc(_ detections: [(entropy: Double, wrong: Bool)]) -> Double {
        let wrong = detections.filter(\.wrong).count
        let right = detections.count - wrong
        guard wrong > 0, right > 0 else { return .nan }
        let sorted = detections.sorted { $0.entropy < $1.entropy }
        var (rankSum, index) = (0.0, 0)
        while index < sorted.count {
            var end = index
            while end + 1 < sorted.count && sorted[end + 1].entropy == sorted[index].entropy { end += 1 }
            let rank = Double(index + end) / 2 + 1  // average 1-based rank of the tie group
            for i in index...end where sorted[i].wrong { rankSum += rank }
            index = end + 1
        }
        return (rankSum - Double(wrong) * Double(wrong + 1) / 2) / (Double(wrong) * Double(right))
    }
}

/// A reliability diagram's bins for each class, one class against the rest, pooled over the voxels of many cases:
/// per equal-width bin of the predicted probability of the class, the voxels, the sum of their outcomes (reference
/// is the class) and the sum of their probabilities. `ClassCalibration`'s expected calibration error is this
/// over one case.
public struct ReliabilityBins: Sendable, Equatable {
    public let binCount: Int
    public let classCount: Int
    /// [class][bin].
    public private(set) var counts: [[Int]]
    public private(set) var outcomes: [[Double]]
    public private(set) var probabilities: [[Double]]

    public init(classCount: Int, bins: Int = 15) {
        (binCount, self.classCount) = (bins, classCount)
        counts = Array(repeating: Array(repeating: 0, count: bins), count: classCount)
        (outcomes, probabilities) = (
            Array(repeating: Array(repeating: 0, count: bins), count: classCount),
            Array(repeating: Array(repeating: 0, count: bins), count: classCount)
        )
    }

    /// Adds a case: `probabilities` [frames, K, plane] (class-major per frame, as `/probabilities` stores them)
    /// and the reference labels [frames, plane].
    public mutating func add(probabilities values: [Float], reference: [Int32], frames: Int) {
        precondition(frames > 0 && values.count == reference.count * classCount && reference.count % frames == 0)
        let plane = reference.count / frames
        for frame in 0..<frames {
            for c in 0..<classCount {
                let base = (frame * classCount + c) * plane
                for pixel in 0..<plane {
                    let p = Double(values[base + pixel])
                    let bin = min(binCount - 1, max(0, Int(p * Double(binCount))))
                    counts[c][bin] += 1
                    probabilities[c][bin] += p
                    if reference[frame * plane + pixel] == c { outcomes[c][bin] += 1 }
                }
            }
        }
    }

    /// Class `c`'s expected calibration error over every voxel added.
    public func expectedCalibrationError(_ c: Int) -> Double {
        let total = Double(counts[c].reduce(0, +))
        guard total > 0 else { return .nan }
        return (0..<binCount).filter { counts[c][$0] > 0 }.map { bin in
            let n = Double(counts[c][bin])
            return n / total * abs(outcomes[c][bin] / n - probabilities[c][bin] / n)
        }.reduce(0, +)
    }

    /// Class `c`'s non-empty bins as (mean predicted probability, observed frequency, voxels).
    public func points(_ c: Int) -> [(confidence: Double, frequency: Double, count: Int)] {
        (0..<binCount).filter { counts[c][$0] > 0 }.map { bin in
            let n = Double(counts[c][bin])
            return (probabilities[c][bin] / n, outcomes[c][bin] / n, counts[c][bin])
        }
    }
}
