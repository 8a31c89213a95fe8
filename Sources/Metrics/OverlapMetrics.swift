/// The confusion-matrix metrics of one class in one case.
///
/// With R reference voxels, P predicted voxels and TP, FP, FN, TN the class's counts:
/// Dice 2TP/(R+P), IoU TP/(TP+FP+FN), precision TP/P, recall TP/R, specificity TN/(TN+FP), accuracy
/// (TP+TN)/N, volumetric similarity 1 − |P−R|/(P+R), volumes R·v and P·v in mL (v the voxel volume).
/// Empty masks follow `EmptyRule` (the README's table): under `.nan` an empty reference makes Dice, IoU,
/// precision, recall and volumetric similarity NaN; under `.one` both empty gives 1 and an empty reference
/// with a non-empty prediction gives 0 (recall NaN). Any other 0/0 (precision with P = 0, specificity when the
/// class fills the image) is NaN, as in MONAI's `ConfusionMatrixMetric`.
public struct OverlapMetrics: Sendable, Equatable {
    public var dice: Double
    public var iou: Double
    public var precision: Double
    public var recall: Double
    public var specificity: Double
    public var accuracy: Double
    public var volumeSimilarity: Double
    public var referenceVolumeML: Double
    public var predictedVolumeML: Double

    /// Computes the metrics of class `classIndex` from a confusion matrix.
    ///
    /// - Parameters:
    ///   - voxelVolumeMM3: the volume of one voxel in mm³ (slice thickness × row × column spacing).
    ///   - empty: the rule for an empty reference.
    public init(_ confusion: ConfusionMatrix, classIndex c: Int, voxelVolumeMM3: Double, empty: EmptyRule) {
        let tp = Double(confusion.truePositives(c))
        let fp = Double(confusion.falsePositives(c))
        let fn = Double(confusion.falseNegatives(c))
        let tn = Double(confusion.trueNegatives(c))
        let reference = tp + fn
        let predicted = tp + fp
        func ratio(_ a: Double, _ b: Double) -> Double { b == 0 ? .nan : a / b }
        dice = ratio(2 * tp, reference + predicted)
        iou = ratio(tp, tp + fp + fn)
        precision = ratio(tp, predicted)
        recall = ratio(tp, reference)
        specificity = ratio(tn, tn + fp)
        accuracy = ratio(tp + tn, tp + tn + fp + fn)
        volumeSimilarity = reference + predicted == 0 ? .nan : 1 - abs(predicted - reference) / (predicted + reference)
        referenceVolumeML = reference * voxelVolumeMM3 / 1000
        predictedVolumeML = predicted * voxelVolumeMM3 / 1000
        if reference == 0 {
            switch empty {
            case .nan:
                (dice, iou, precision, recall, volumeSimilarity) = (.nan, .nan, .nan, .nan, .nan)
            case .one where predicted == 0:
                (dice, iou, precision, recall, volumeSimilarity) = (1, 1, 1, 1, 1)
            case .one:
                (dice, iou, precision, recall, volumeSimilarity) = (0, 0, 0, .nan, 0)
            }
        }
    }
}
