import Metrics
import Testing

@testable import SliceLabDatasets
@testable import SliceLabIO
@testable import SliceLabResults

/// The one per-case metrics builder of `evaluate` and `compare`: its checks name the case and say what to do.
struct CaseEvaluationTests {
    static let settings = EvaluationSettings(classCount: 3)

    @Test func metricsOfOneCaseOnItsGrid() throws {
        let reference = LabelMap(frames: 1, rows: 2, columns: 3, labels: [0, 1, 1, 2, 2, 0], spacing: [1, 0.5, 0.5])
        let metrics = try CaseEvaluation.metrics(
            caseID: "a", reference: reference, prediction: reference,
            spacing: reference.spacing, settings: Self.settings, remedy: "")
        let expected = try CaseMetrics(
            reference: CaseEvaluation.grid(reference, reference.spacing),
            prediction: CaseEvaluation.grid(reference, reference.spacing),
            settings: Self.settings, voxelVolumeMM3: 0.25)
        #expect(metrics.values == expected.values)
    }

    @Test func shapeMismatchNamesTheCase() {
        let a = LabelMap(frames: 1, rows: 2, columns: 2, labels: [0, 1, 1, 0])
        let b = LabelMap(frames: 1, rows: 1, columns: 4, labels: [0, 1, 1, 0])
        #expect(throws: DatasetError.pairShapeMismatch(case: "c7", reference: [1, 2, 2], prediction: [1, 1, 4])) {
            try CaseEvaluation.metrics(
                caseID: "c7", reference: a, prediction: b, spacing: [1, 1, 1],
                settings: Self.settings, remedy: "")
        }
    }

    @Test func labelOutOfRangeNamesTheCaseAndTheRemedy() {
        let a = LabelMap(frames: 1, rows: 1, columns: 3, labels: [0, 1, 2])
        let b = LabelMap(frames: 1, rows: 1, columns: 3, labels: [0, 5, 2])
        #expect(
            throws: DatasetError.invalidOption(
                "case 'c2': prediction holds label 5, not below the class count "
                    + "3; do this")
        ) {
            try CaseEvaluation.metrics(
                caseID: "c2", reference: a, prediction: b, spacing: [1, 1, 1],
                settings: Self.settings, remedy: "do this")
        }
    }
}
