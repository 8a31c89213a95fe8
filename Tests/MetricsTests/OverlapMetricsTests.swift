import Metrics
import SliceLabSupport
import Testing

/// The confusion matrix, the overlap formulas, volumes from spacing and the pinned empty-mask rules.
@Suite struct OverlapMetricsTests {
    // Reference and prediction over 2×4 pixels, classes 0...2.
    static let reference: [UInt16] = [0, 1, 1, 1, 2, 2, 0, 0]
    static let prediction: [UInt16] = [0, 1, 1, 0, 2, 1, 1, 0]

    @Test func confusionMatrixHasReferenceRowsAndPredictionColumns() throws {
        let m = try ConfusionMatrix(reference: Self.reference, prediction: Self.prediction, classCount: 3)
        #expect(
            m.counts == [
                2, 1, 0,
                1, 2, 0,
                0, 1, 1
            ])
        #expect(
            m.truePositives(1) == 2 && m.falsePositives(1) == 2 && m.falseNegatives(1) == 1
                && m.trueNegatives(1) == 3)
    }

    @Test func formulasAndVolumesFollowTheConfusionCounts() throws {
        let grid = { try LabelGrid(shape: [2, 4], spacing: [0.5, 2], labels: $0) }
        let m = try ConfusionMatrix(reference: grid(Self.reference), prediction: grid(Self.prediction), classCount: 3)
        let o = OverlapMetrics(m, classIndex: 1, voxelVolumeMM3: 2.5 * 0.5 * 2, empty: .nan)
        #expect(o.dice == 4.0 / 7 && o.iou == 2.0 / 5 && o.precision == 0.5 && o.recall == 2.0 / 3)
        #expect(o.specificity == 3.0 / 5 && o.accuracy == 5.0 / 8 && o.volumeSimilarity == 1 - 1.0 / 7)
        #expect(o.referenceVolumeML == 3 * 2.5 / 1000 && o.predictedVolumeML == 4 * 2.5 / 1000)
    }

    /// Every row of the empty-mask table (SliceLabResults.docc, Evaluation).
    @Test func emptyMaskRulesAreThePinnedTable() throws {
        func metrics(_ r: [UInt16], _ p: [UInt16], _ rule: EmptyRule) throws -> (OverlapMetrics, SurfaceDistances) {
            let m = try ConfusionMatrix(reference: r, prediction: p, classCount: 2)
            let d = try SurfaceDistances(
                prediction: p.map { $0 == 1 }, reference: r.map { $0 == 1 }, shape: [2, 2],
                spacing: [1, 1])
            return (OverlapMetrics(m, classIndex: 1, voxelVolumeMM3: 1, empty: rule), d)
        }
        let empty: [UInt16] = [0, 0, 0, 0]
        let some: [UInt16] = [1, 0, 0, 0]
        // Both empty.
        var (o, d) = try metrics(empty, empty, .nan)
        #expect(o.dice.isNaN && o.iou.isNaN && o.precision.isNaN && o.recall.isNaN && o.volumeSimilarity.isNaN)
        #expect(
            d.hausdorff.isNaN && d.hausdorff95(.max).isNaN && d.averageSymmetricSurfaceDistance.isNaN
                && d.normalizedSurfaceDistance(toleranceMM: 1).isNaN)
        (o, _) = try metrics(empty, empty, .one)
        #expect(o.dice == 1 && o.iou == 1 && o.precision == 1 && o.recall == 1 && o.volumeSimilarity == 1)
        // Reference empty, prediction not.
        (o, d) = try metrics(empty, some, .nan)
        #expect(o.dice.isNaN && o.iou.isNaN && o.precision.isNaN && o.recall.isNaN)
        #expect(
            d.hausdorff == .infinity && d.hausdorff95(.pooled) == .infinity
                && d.averageSymmetricSurfaceDistance == .infinity && d.normalizedSurfaceDistance(toleranceMM: 1) == 0)
        (o, _) = try metrics(empty, some, .one)
        #expect(o.dice == 0 && o.iou == 0 && o.precision == 0 && o.recall.isNaN && o.volumeSimilarity == 0)
        // Prediction empty, reference not: overlap 0, precision NaN (0/0), distances +∞, NSD 0, under both rules.
        for rule in EmptyRule.allCases {
            (o, d) = try metrics(some, empty, rule)
            #expect(o.dice == 0 && o.iou == 0 && o.recall == 0 && o.precision.isNaN && o.volumeSimilarity == 0)
            #expect(
                d.hausdorff == .infinity && d.hausdorff95(.max) == .infinity
                    && d.normalizedSurfaceDistance(toleranceMM: 5) == 0)
        }
    }

    @Test func labelsAtOrAboveTheClassCountAndShapeMismatchesAreRefused() throws {
        #expect(throws: MetricsError.labelOutOfRange(label: 2, classCount: 2, role: "reference")) {
            try ConfusionMatrix(reference: Self.reference, prediction: [0, 0, 0, 0, 0, 0, 0, 0], classCount: 2)
        }
        #expect(throws: MetricsError.labelOutOfRange(label: 7, classCount: 3, role: "prediction")) {
            try ConfusionMatrix(reference: Self.reference, prediction: [0, 0, 0, 0, 0, 0, 0, 7], classCount: 3)
        }
        let a = try LabelGrid(shape: [2, 4], spacing: [1, 1], labels: Self.reference)
        let b = try LabelGrid(shape: [4, 2], spacing: [1, 1], labels: Self.prediction)
        #expect(throws: MetricsError.shapeMismatch(reference: [2, 4], prediction: [4, 2])) {
            try CaseMetrics(reference: a, prediction: b, settings: EvaluationSettings(classCount: 3))
        }
        #expect(throws: MetricsError.invalidSpacing([1, 0])) {
            try LabelGrid(shape: [2, 4], spacing: [1, 0], labels: Self.reference)
        }
    }

    @Test func countingAcrossWorkersEqualsASingleLoop() throws {
        var generator = SeededGenerator(seed: 9)
        let count = 1 << 20
        let r = (0..<count).map { _ in UInt16(generator.next() % 4) }
        let p = (0..<count).map { _ in UInt16(generator.next() % 4) }
        var expected = [Int64](repeating: 0, count: 16)
        for i in 0..<count { expected[Int(r[i]) * 4 + Int(p[i])] += 1 }
        #expect(try ConfusionMatrix(reference: r, prediction: p, classCount: 4).counts == expected)
    }
}
