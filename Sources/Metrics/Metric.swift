import SliceLabSupport

/// One metric of one class in one case. Each metric is a conforming type listed once in
/// `MetricRegistry.metrics`: a results file gains it as `/runs/<run>/metrics/<name>`, `compare` its paired
/// tests, and older results files that lack it still load.
public protocol Metric: Sendable {
    /// The metric's dataset name.
    var name: MetricName { get }
    /// The metric of `evaluation`'s class (NaN where it is undefined).
    func value(_ evaluation: ClassEvaluation) throws -> Double
}

/// The registered metrics, in the order results files and reports list them.
public enum MetricRegistry {
    public static let metrics: [any Metric] = OverlapMetric.allCases + SurfaceMetric.allCases
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

    init(
        reference: LabelGrid<UInt16>, prediction: LabelGrid<UInt16>, confusion: ConfusionMatrix, classIndex: Int,
        settings: EvaluationSettings, voxelVolumeMM3: Double
    ) {
        (self.reference, self.prediction, self.confusion) = (reference, prediction, confusion)
        (self.classIndex, self.settings, self.voxelVolumeMM3) = (classIndex, settings, voxelVolumeMM3)
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

extension MetricName {
    public static let dice = MetricName("dice"), iou = MetricName("iou"), precision = MetricName("precision")
    public static let recall = MetricName("recall"), specificity = MetricName("specificity")
    public static let accuracy = MetricName("accuracy"), volumeSimilarity = MetricName("volume_similarity")
    public static let volumeReferenceML = MetricName("volume_ref_ml"), volumePredictedML = MetricName("volume_pred_ml")
    public static let hd = MetricName("hd"), hd95 = MetricName("hd95"), assd = MetricName("assd"),
        nsd = MetricName("nsd")
}
