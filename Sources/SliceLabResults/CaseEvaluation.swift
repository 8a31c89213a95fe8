import Metrics
import SliceLabDatasets
import SliceLabIO
import SliceLabSupport

/// Per-case metrics of a prediction against its reference: the one builder `evaluate` and `compare` use, with
/// the shape check and the errors that name the case.
public enum CaseEvaluation {
    /// The metrics of one case on the grid `spacing` (slice, row, column mm) gives.
    ///
    /// - Parameter remedy: what to do about a label at or above the class count (it depends on where the count
    ///   came from: `--num-classes`, a set's `dataset.json`).
    /// - Throws: `DatasetError.pairShapeMismatch`, `DatasetError.invalidOption` for a label out of range, and any other
    ///   `MetricsError` wrapped with the case (`MetricsError.inCase`).
    public static func metrics(
        caseID: String, reference: LabelMap, prediction: LabelMap, spacing: [Double],
        settings: EvaluationSettings, remedy: String, probabilities: [Float]? = nil
    ) throws -> CaseMetrics {
        guard reference.dimensions == prediction.dimensions else {
            throw DatasetError.pairShapeMismatch(
                case: caseID, reference: reference.dimensions, prediction: prediction.dimensions)
        }
        do {
            return try CaseMetrics(
                reference: grid(reference, spacing), prediction: grid(prediction, spacing), settings: settings,
                voxelVolumeMM3: spacing.reduce(1, *), probabilities: probabilities)
        } catch let MetricsError.labelOutOfRange(label, classCount, role) {
            throw DatasetError.invalidOption(
                "case '\(caseID)': \(role) holds label \(label), not below the "
                    + "class count \(classCount); \(remedy)")
        } catch let error as MetricsError {
            throw MetricsError.inCase(caseID, error)
        }
    }

    /// The metrics of every case (`metrics(caseID:…)` on each reference's grid), cases in parallel.
    public static func metrics(
        of predictions: [LabelMap], references: [LabelMap], caseNames: [String], settings: EvaluationSettings,
        remedy: String
    ) throws -> [CaseMetrics] {
        try Parallel.map(predictions.count) { index in
            try metrics(
                caseID: caseNames[index], reference: references[index], prediction: predictions[index],
                spacing: references[index].spacing, settings: settings, remedy: remedy)
        }
    }

    /// A label map as a metrics grid: 2-D for one frame (spacing rows, columns), else 3-D.
    static func grid(_ map: LabelMap, _ spacing: [Double]) throws -> LabelGrid<UInt16> {
        let labels = map.labels.map { UInt16(clamping: $0) }
        if map.frames == 1 {
            return try LabelGrid(shape: [map.rows, map.columns], spacing: Array(spacing[1...]), labels: labels)
        }
        return try LabelGrid(shape: [map.frames, map.rows, map.columns], spacing: spacing, labels: labels)
    }
}
