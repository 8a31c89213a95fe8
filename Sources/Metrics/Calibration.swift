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
