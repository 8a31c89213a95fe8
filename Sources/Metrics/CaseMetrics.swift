/// The metrics a results file holds, by their dataset names under `/runs/<run>/metrics/`.
public enum MetricName: String, Sendable, CaseIterable, Codable {
    case dice, iou, precision, recall, specificity, accuracy
    case volumeSimilarity = "volume_similarity"
    case volumeReferenceML = "volume_ref_ml"
    case volumePredictedML = "volume_pred_ml"
    case hd, hd95, assd, nsd
}

/// How a case is evaluated: the definitions the README pins, recorded with the results.
public struct EvaluationSettings: Sendable, Codable, Equatable {
    public var classCount: Int
    /// NSD tolerance in mm.
    public var toleranceMM: Double
    public var hd95: HD95Definition
    public var empty: EmptyRule

    public init(classCount: Int, toleranceMM: Double = 1, hd95: HD95Definition = .max, empty: EmptyRule = .nan) {
        (self.classCount, self.toleranceMM, self.hd95, self.empty) = (classCount, toleranceMM, hd95, empty)
    }
}

/// Every metric of every class for one case, and its confusion matrix.
public struct CaseMetrics: Sendable {
    public let confusion: ConfusionMatrix
    /// `values[metric][class]`.
    public let values: [MetricName: [Double]]

    /// Evaluates a prediction against a reference of the same shape.
    ///
    /// - Parameters:
    ///   - voxelVolumeMM3: the voxel volume for the mL volumes; by default the product of the map's spacing
    ///     (for a 2-D map pass the slice thickness times the pixel area).
    /// - Throws: `MetricsError.shapeMismatch`, `.labelOutOfRange`, `.invalidArgument`.
    public init(reference: LabelGrid, prediction: LabelGrid, settings: EvaluationSettings,
                voxelVolumeMM3: Double? = nil) throws {
        guard reference.shape == prediction.shape else {
            throw MetricsError.shapeMismatch(reference: reference.shape, prediction: prediction.shape)
        }
        guard settings.toleranceMM >= 0, settings.toleranceMM.isFinite else {
            throw MetricsError.invalidArgument("NSD tolerance \(settings.toleranceMM) mm must be finite and ≥ 0")
        }
        let k = settings.classCount
        confusion = try ConfusionMatrix(reference: reference, prediction: prediction, classCount: k)
        let volume = voxelVolumeMM3 ?? reference.voxelVolume
        var values = [MetricName: [Double]]()
        for name in MetricName.allCases { values[name] = [Double](repeating: .nan, count: k) }
        for c in 0..<k {
            let overlap = OverlapMetrics(confusion, classIndex: c, voxelVolumeMM3: volume, empty: settings.empty)
            values[.dice]![c] = overlap.dice
            values[.iou]![c] = overlap.iou
            values[.precision]![c] = overlap.precision
            values[.recall]![c] = overlap.recall
            values[.specificity]![c] = overlap.specificity
            values[.accuracy]![c] = overlap.accuracy
            values[.volumeSimilarity]![c] = overlap.volumeSimilarity
            values[.volumeReferenceML]![c] = overlap.referenceVolumeML
            values[.volumePredictedML]![c] = overlap.predictedVolumeML
            let distances: SurfaceDistances
            if confusion.truePositives(c) + confusion.falsePositives(c) + confusion.falseNegatives(c) == 0 {
                distances = .bothEmpty
            } else {
                distances = try SurfaceDistances(prediction: prediction.mask(of: c), reference: reference.mask(of: c),
                                                 shape: reference.shape, spacing: reference.spacing)
            }
            values[.hd]![c] = distances.hausdorff
            values[.hd95]![c] = distances.hausdorff95(settings.hd95)
            values[.assd]![c] = distances.averageSymmetricSurfaceDistance
            values[.nsd]![c] = distances.normalizedSurfaceDistance(toleranceMM: settings.toleranceMM)
        }
        self.values = values
    }
}
