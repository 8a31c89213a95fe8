import SliceLabSupport

/// A metric's name: its dataset name under `/runs/<run>/metrics/`. The metrics themselves are the registered
/// `Metric` types (`MetricRegistry.metrics`); `allCases` lists their names in the registry's order.
public struct MetricName: RawRepresentable, Hashable, Sendable, Codable, CaseIterable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static var allCases: [MetricName] { MetricRegistry.metrics.map { $0.name } }
    public var description: String { rawValue }
}

/// Metric values by metric: a table in which a metric is present or absent (a results file written before a
/// metric existed lacks it). For one case a metric's values are per class; for a run, row-major [cases, classes].
public struct MetricTable: Sendable, Equatable {
    private var columns: [MetricName: [Double]] = [:]

    public init() {}

    /// The values of `metric`, or nil when the table does not hold it.
    public subscript(metric: MetricName) -> [Double]? {
        get { columns[metric] }
        set { columns[metric] = newValue }
    }

    /// The metrics present, in `MetricName`'s declaration order.
    public var metrics: [MetricName] { MetricName.allCases.filter { columns[$0] != nil } }

    /// Appends `other`'s values of every metric it holds (a run's table grows case by case).
    public mutating func append(_ other: MetricTable) {
        for (metric, values) in other.columns { columns[metric, default: []] += values }
    }
}

extension MetricName {
    /// A stable 64-bit number for the metric, from its name (FNV-1a): seeds derived from it do not move when
    /// metrics are added or reordered.
    public var stableHash: UInt64 {
        rawValue.utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
    }
}

/// How a case is evaluated: the definitions the README pins, recorded with the results.
public struct EvaluationSettings: Sendable, Codable, Equatable {
    public var classCount: Int
    /// NSD tolerance in mm.
    public var toleranceMM: Double
    public var hd95: HD95Definition
    public var empty: EmptyRule
    /// The classes scored lesion by lesion as well (`LesionMetric`); none by default.
    public var lesionClasses: [Int]
    /// The bins of the expected calibration error when the prediction's probabilities are evaluated too
    /// (`CalibrationMetric`); nil without probabilities.
    public var calibrationBins: Int?

    public init(
        classCount: Int, toleranceMM: Double = 1, hd95: HD95Definition = .max, empty: EmptyRule = .nan,
        lesionClasses: [Int] = [], calibrationBins: Int? = nil
    ) {
        (self.classCount, self.toleranceMM, self.hd95, self.empty) = (classCount, toleranceMM, hd95, empty)
        (self.lesionClasses, self.calibrationBins) = (lesionClasses, calibrationBins)
    }

    private enum CodingKeys: String, CodingKey {
        case classCount, toleranceMM, hd95, empty, lesionClasses, calibrationBins
    }

    /// Decodes settings recorded before lesion classes existed as having none.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            classCount: try container.decode(Int.self, forKey: .classCount),
            toleranceMM: try container.decode(Double.self, forKey: .toleranceMM),
            hd95: try container.decode(HD95Definition.self, forKey: .hd95),
            empty: try container.decode(EmptyRule.self, forKey: .empty),
            lesionClasses: try container.decodeIfPresent([Int].self, forKey: .lesionClasses) ?? [],
            calibrationBins: try container.decodeIfPresent(Int.self, forKey: .calibrationBins))
    }
}

/// Every metric of every class for one case, and its confusion matrix.
public struct CaseMetrics: Sendable {
    public let confusion: ConfusionMatrix
    /// Every metric, per class.
    public let values: MetricTable

    /// Evaluates a prediction against a reference of the same shape.
    ///
    /// - Parameters:
    ///   - voxelVolumeMM3: the voxel volume for the mL volumes; by default the product of the map's spacing
    ///     (for a 2-D map pass the slice thickness times the pixel area).
    ///   - probabilities: the prediction's class probabilities, [frames, K, rows, columns] (a 2-D map: [K, rows,
    ///     columns]), for the calibration metrics (`settings.calibrationBins`).
    /// - Throws: `MetricsError.shapeMismatch`, `.labelOutOfRange`, `.invalidArgument` (also for calibration
    ///   without probabilities).
    public init(
        reference: LabelGrid<UInt16>, prediction: LabelGrid<UInt16>, settings: EvaluationSettings,
        voxelVolumeMM3: Double? = nil, probabilities: [Float]? = nil
    ) throws {
        guard reference.shape == prediction.shape else {
            throw MetricsError.shapeMismatch(
                reference: reference.shape.dimensions, prediction: prediction.shape.dimensions)
        }
        guard settings.toleranceMM >= 0, settings.toleranceMM.isFinite else {
            throw MetricsError.invalidArgument("NSD tolerance \(settings.toleranceMM) mm must be finite and ≥ 0")
        }
        let k = settings.classCount
        let confusion = try ConfusionMatrix(reference: reference, prediction: prediction, classCount: k)
        self.confusion = confusion
        let volume = voxelVolumeMM3 ?? reference.voxelVolume
        if let probabilities, probabilities.count != k * reference.labels.count {
            throw MetricsError.invalidArgument(
                "\(probabilities.count) probabilities for \(k) classes of \(reference.labels.count) voxels")
        }
        let evaluations = (0..<k).map {
            ClassEvaluation(
                reference: reference, prediction: prediction, confusion: confusion, classIndex: $0,
                settings: settings, voxelVolumeMM3: volume, probabilities: probabilities)
        }
        var values = MetricTable()
        for metric in MetricRegistry.metrics where metric.isComputed(for: settings) {
            values[metric.name] = try evaluations.map { try metric.value($0) }
        }
        self.values = values
    }
}
