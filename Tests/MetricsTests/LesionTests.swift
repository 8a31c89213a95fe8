import Foundation
import SliceLabSupport
import TestSupport
import Testing

@testable import Metrics

/// The committed goldens of `Datasets/goldens/lesion_goldens.py` (brats-evaluation's `gli` evaluator, panoptica).
struct LesionGoldens: Decodable {
    struct Group: Decodable {
        let tp, fp, fn, prec, rec, rq, sq, pq, sq_dsc, sq_hd95: String
    }

    struct Case: Decodable, GoldenLabelMaps {
        let name: String
        let shape: [Int]
        let spacing: [Double]
        let class_count: Int
        let reference: String
        let prediction: String
        let brats: [String: Group]

        /// The map as brats-evaluation saw it: a 2-D case is a one-slice volume there, whose every pixel lies on
        /// the surface (the slices above and below are outside), so its HD95 is not a 2-D surface's.
        func volume(_ digits: String) throws -> LabelGrid<UInt16> {
            guard shape.count == 2 else { return try grid(digits) }
            return try grid(digits, shape: [1] + shape, spacing: [1] + spacing)
        }
    }

    let versions: [String: String]
    let groups: [String: Int]
    let cases: [Case]

    static func load() throws -> LesionGoldens {
        let url = TestSupport.packageRoot.appendingPathComponent("Tests/MetricsTests/Fixtures/lesion_goldens.json")
        return try JSONDecoder().decode(LesionGoldens.self, from: Data(contentsOf: url))
    }
}

/// Lesion-wise metrics against brats-evaluation 0.0.10 (panoptica 2.1.7) on made BraTS-labelled cases: 3-D with
/// isotropic and anisotropic spacing, splits, merges, misses, false positives, lesions on the border, empty sides,
/// and 2-D slices.
@Suite struct LesionTests {
    static let goldens = Result { try LesionGoldens.load() }

    @Test func lesionMetricsMatchBraTSEvaluation() throws {
        let goldens = try Self.goldens.get()
        #expect(goldens.versions["brats-evaluation"] == "0.0.10" && goldens.versions["panoptica"] == "2.1.7")
        var compared = 0
        for golden in goldens.cases {
            let lesionClasses = goldens.groups.values.sorted()
            let metrics = try CaseMetrics(
                reference: golden.volume(golden.reference), prediction: golden.volume(golden.prediction),
                settings: EvaluationSettings(
                    classCount: golden.class_count, hd95: .pooled, lesionClasses: lesionClasses))
            for (group, label) in goldens.groups {
                let theirs = try #require(golden.brats[group])
                let (tp, fp, fn) = (value(theirs.tp), value(theirs.fp), value(theirs.fn))
                let scored = tp + fp + fn
                // The matched pairs' sum of a per-pair mean (panoptica reports ∞ or 0 for the mean when none match).
                func matched(_ mean: String) -> Double { tp == 0 ? 0 : value(mean) * tp }
                let expected: [(MetricName, Double)] = [
                    (LesionMetric.dice.name, scored == 0 ? .nan : matched(theirs.sq_dsc) / scored),
                    (LesionMetric.hd95.name, scored == 0 ? .nan : (matched(theirs.sq_hd95) + 374 * (fp + fn)) / scored),
                    (LesionMetric.sensitivity.name, value(theirs.rec)),
                    (LesionMetric.precision.name, value(theirs.prec)),
                    (LesionMetric.f1.name, value(theirs.rq)),
                    (LesionMetric.panopticQuality.name, value(theirs.pq))
                ]
                for (metric, theirs) in expected {
                    let ours = try #require(metrics.values[metric])[label]
                    #expect(agree(ours, theirs, 1e-9), "\(golden.name) \(group) \(metric): \(ours) vs brats \(theirs)")
                    compared += 1
                }
            }
        }
        #expect(compared == goldens.cases.count * goldens.groups.count * 6)
    }

    @Test func countsMatchBraTSEvaluation() throws {
        let goldens = try Self.goldens.get()
        for golden in goldens.cases {
            for (group, label) in goldens.groups {
                let theirs = try #require(golden.brats[group])
                let lesions = try LesionMatching(
                    reference: golden.grid(golden.reference), prediction: golden.grid(golden.prediction),
                    classIndex: label, hd95: .pooled)
                let counts = [lesions.truePositives, lesions.falsePositives, lesions.falseNegatives].map(Double.init)
                let expected = [value(theirs.tp), value(theirs.fp), value(theirs.fn)].map { $0.isNaN ? 0 : $0 }
                #expect(counts == expected, "\(golden.name) \(group): TP, FP, FN \(counts) vs brats \(expected)")
            }
        }
    }

    /// Without lesion classes the lesion metrics are absent, not NaN; classes not declared lesions are NaN.
    @Test func lesionMetricsAppearOnlyForDeclaredClasses() throws {
        let reference = try LabelGrid(shape: [4, 4], spacing: [1, 1], labels: [UInt16](repeating: 1, count: 16))
        let plain = try CaseMetrics(
            reference: reference, prediction: reference, settings: EvaluationSettings(classCount: 2))
        #expect(plain.values[LesionMetric.dice.name] == nil)
        let declared = try CaseMetrics(
            reference: reference, prediction: reference,
            settings: EvaluationSettings(classCount: 2, lesionClasses: [1]))
        let dice = try #require(declared.values[LesionMetric.dice.name])
        #expect(dice[0].isNaN && dice[1] == 1)
        #expect(declared.values[LesionMetric.hd95.name]?[1] == 0)
    }

    /// Neither map has a lesion: NaN, or BraTS's perfect score under `--empty one`.
    @Test func noLesionOnEitherSideFollowsTheEmptyRule() throws {
        let empty = try LabelGrid(shape: [3, 3], spacing: [1, 1], labels: [UInt16](repeating: 0, count: 9))
        for (rule, dice, hd95) in [(EmptyRule.nan, Double.nan, Double.nan), (.one, 1, 0)] {
            let metrics = try CaseMetrics(
                reference: empty, prediction: empty,
                settings: EvaluationSettings(classCount: 2, empty: rule, lesionClasses: [1]))
            #expect(agree(metrics.values[LesionMetric.dice.name]![1], dice, 0))
            #expect(agree(metrics.values[LesionMetric.hd95.name]![1], hd95, 0))
            #expect(metrics.values[LesionMetric.sensitivity.name]![1].isNaN)
        }
    }
}
