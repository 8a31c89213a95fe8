import SliceLabSupport

/// One metric of one class in one case. Each metric is a conforming type listed once in
/// `MetricRegistry.metrics`: a results file gains it as `/runs/<run>/metrics/<name>`, `compare` its paired
/// tests, and older results files that lack it still load.
public protocol Metric: Sendable {
    /// The metric's dataset name.
    var name: MetricName { get }
    /// The metric of `evaluation`'s class (NaN where it is undefined).
    func value(_ evaluation: ClassEvaluation) throws -> Double
    /// Whether an evaluation with `settings` computes the metric at all (lesion-wise metrics need lesion classes);
    /// a metric not computed is absent from the results, not NaN.
    func isComputed(for settings: EvaluationSettings) -> Bool
}

extension Metric {
    public func isComputed(for settings: EvaluationSettings) -> Bool { true }
}

/// The registered metrics, in the order results files and reports list them.
public enum MetricRegistry {
    public static let metrics: [any Metric] =
        OverlapMetric.allCases + SurfaceMetric.allCases + LesionMetric.allCases + CalibrationMetric.allCases
}

/// What a metric of one class sees: both label maps, the confusion matrix, the evaluation's settings, and the
/// class's overlap counts and surface distances, each computed once on first use.
public final class ClassEvaluation {
    public let reference: LabelGrid<UInt16>
    public let prediction: LabelGrid<UInt16>
    public let confusion: ConfusionMatrix
    public let classIndex: Int
    public let settings: EvaluationSettings
    /// The volume of one voxel in mm³, for volumes in mL.
    public let voxelVolumeMM3: Double
    /// The prediction's class probabilities, [frames, K, rows, columns], when evaluated.
    public let probabilities: [Float]?

    init(
        reference: LabelGrid<UInt16>, prediction: LabelGrid<UInt16>, confusion: ConfusionMatrix, classIndex: Int,
        settings: EvaluationSettings, voxelVolumeMM3: Double, probabilities: [Float]? = nil
    ) {
        (self.reference, self.prediction, self.confusion) = (reference, prediction, confusion)
        (self.classIndex, self.settings, self.voxelVolumeMM3) = (classIndex, settings, voxelVolumeMM3)
        self.probabilities = probabilities
    }

    /// The confusion-matrix metrics of the class.
    public private(set) lazy var overlap = OverlapMetrics(
        confusion, classIndex: classIndex,
        voxelVolumeMM3: voxelVolumeMM3, empty: settings.empty)

    /// The surface distances between the class's predicted and reference masks (`.bothEmpty` when neither has
    /// the class).
    public func surfaceDistances() throws -> SurfaceDistances {
        if let cached = distances { return cached }
        let c = classIndex
        let found: SurfaceDistances
        if confusion.truePositives(c) + confusion.falsePositives(c) + confusion.falseNegatives(c) == 0 {
            found = .bothEmpty
        } else {
            found = try SurfaceDistances(
                prediction: prediction.mask(of: c), reference: reference.mask(of: c),
                shape: reference.shape.dimensions, spacing: reference.spacing)
        }
        distances = found
        return found
    }

    private var distances: SurfaceDistances?

    /// The class's lesions and their matching (`LesionMatching`), computed on first use.
    public func lesions() throws -> LesionMatching {
        if let cached = matching { return cached }
        let found = try LesionMatching(
            reference: reference, prediction: prediction, classIndex: classIndex, hd95: settings.hd95)
        matching = found
        return found
    }

    private var matching: LesionMatching?

    /// The class's calibration (`ClassCalibration`), computed on first use.
    ///
    /// - Throws: `MetricsError.invalidArgument` without probabilities.
    public func calibration() throws -> ClassCalibration {
        if let calibrated { return calibrated }
        guard let probabilities, let bins = settings.calibrationBins else {
            throw MetricsError.invalidArgument("calibration metrics need the prediction's probabilities")
        }
        let (k, plane) = (settings.classCount, reference.shape.rows * reference.shape.columns)
        let found = ClassCalibration(
            classIndex: classIndex,
            probabilities: { class_, voxel in probabilities[((voxel / plane) * k + class_) * plane + voxel % plane] },
            classCount: k, reference: reference.labels, prediction: prediction.labels, bins: bins)
        calibrated = found
        return found
    }

    private var calibrated: ClassCalibration?
}

/// The metrics read off the confusion matrix (`OverlapMetrics` defines them).
enum OverlapMetric: String, Metric, CaseIterable {
    case dice, iou, precision, recall, specificity, accuracy
    case volumeSimilarity = "volume_similarity"
    case volumeReferenceML = "volume_ref_ml"
    case volumePredictedML = "volume_pred_ml"

    var name: MetricName { MetricName(rawValue) }

    func value(_ evaluation: ClassEvaluation) -> Double {
        let overlap = evaluation.overlap
        switch self {
        case .dice: return overlap.dice
        case .iou: return overlap.iou
        case .precision: return overlap.precision
        case .recall: return overlap.recall
        case .specificity: return overlap.specificity
        case .accuracy: return overlap.accuracy
        case .volumeSimilarity: return overlap.volumeSimilarity
        case .volumeReferenceML: return overlap.referenceVolumeML
        case .volumePredictedML: return overlap.predictedVolumeML
        }
    }
}

/// The metrics of the surface distances (`SurfaceDistances` defines them), with the evaluation's HD95
/// definition and NSD tolerance.
enum SurfaceMetric: String, Metric, CaseIterable {
    case hd, hd95, assd, nsd

    var name: MetricName { MetricName(rawValue) }

    func value(_ evaluation: ClassEvaluation) throws -> Double {
        let distances = try evaluation.surfaceDistances()
        switch self {
        case .hd: return distances.hausdorff
        case .hd95: return distances.hausdorff95(evaluation.settings.hd95)
        case .assd: return distances.averageSymmetricSurfaceDistance
        case .nsd: return distances.normalizedSurfaceDistance(toleranceMM: evaluation.settings.toleranceMM)
        }
    }
}

/// The lesion-wise metrics of the classes the evaluation declares lesions (`EvaluationSettings.lesionClasses`;
/// NaN for the other classes), as `LesionMatching` defines them. Both maps without a lesion of the class: NaN, or
/// under `EmptyRule.one` a perfect score (1, and HD95 0, as BraTS scores it).
enum LesionMetric: String, Metric, CaseIterable {
    case dice = "lesion_dice"
    case hd95 = "lesion_hd95"
    case sensitivity = "lesion_sensitivity"
    case precision = "lesion_precision"
    case f1 = "lesion_f1"
    case panopticQuality = "panoptic_quality"

    var name: MetricName { MetricName(rawValue) }

    func isComputed(for settings: EvaluationSettings) -> Bool { !settings.lesionClasses.isEmpty }

    func value(_ evaluation: ClassEvaluation) throws -> Double {
        guard evaluation.settings.lesionClasses.contains(evaluation.classIndex) else { return .nan }
        let lesions = try evaluation.lesions()
        let perfect = evaluation.settings.empty == .one
        switch self {
        case .dice: return lesions.lesionDice(empty: perfect ? 1 : .nan)
        case .hd95: return lesions.lesionHD95(empty: perfect ? 0 : .nan)
        case .sensitivity: return lesions.sensitivity
        case .precision: return lesions.precision
        case .f1: return lesions.f1(empty: perfect ? 1 : .nan)
        case .panopticQuality: return lesions.panopticQuality(empty: perfect ? 1 : .nan)
        }
    }
}

/// The calibration metrics of an evaluation given the prediction's probabilities (`ClassCalibration` defines
/// them), every class against the rest.
enum CalibrationMetric: String, Metric, CaseIterable {
    case expectedCalibrationError = "ece"
    case brier
    case negativeLogLikelihood = "nll"
    case errorDetectionAUROC = "entropy_error_auroc"

    var name: MetricName { MetricName(rawValue) }

    func isComputed(for settings: EvaluationSettings) -> Bool { settings.calibrationBins != nil }

    func value(_ evaluation: ClassEvaluation) throws -> Double {
        let calibration = try evaluation.calibration()
        switch self {
        case .expectedCalibrationError: return calibration.expectedCalibrationError
        case .brier: return calibration.brier
        case .negativeLogLikelihood: return calibration.negativeLogLikelihood
        case .errorDetectionAUROC: return calibration.errorDetectionAUROC
        }
    }
}

extension MetricName {
    public static let dice = MetricName("dice"), iou = MetricName("iou"), precision = MetricName("precision")
    public static let recall = MetricName("recall"), specificity = MetricName("specificity")
    public static let accuracy = MetricName("accuracy"), volumeSimilarity = MetricName("volume_similarity")
    public static let volumeReferenceML = MetricName("volume_ref_ml"), volumePredictedML = MetricName("volume_pred_ml")
    public static let hd = MetricName("hd"), hd95 = MetricName("hd95"), assd = MetricName("assd"),
        nsd = MetricName("nsd")
    public static let lesionDice = LesionMetric.dice.name, lesionHD95 = LesionMetric.hd95.name
    public static let lesionSensitivity = LesionMetric.sensitivity.name
    public static let lesionPrecision = LesionMetric.precision.name, lesionF1 = LesionMetric.f1.name
    public static let panopticQuality = LesionMetric.panopticQuality.name
    public static let expectedCalibrationError = CalibrationMetric.expectedCalibrationError.name
    public static let brier = CalibrationMetric.brier.name,
        negativeLogLikelihood = CalibrationMetric.negativeLogLikelihood.name
    public static let entropyErrorAUROC = CalibrationMetric.errorDetectionAUROC.name
}
