import Foundation
import SliceLabSupport
import TestSupport
import Testing

@testable import Metrics

/// Calibration metrics against `Datasets/goldens/calibration_goldens.py` (scikit-learn 1.9.1's Brier score,
/// log-loss and ROC AUC; a numpy reference for the 15-bin ECE) on made 2-D and 3-D cases.
@Suite struct CalibrationTests {
    struct Goldens: Decodable {
        struct Case: Decodable {
            let name: String
            let shape: [Int]
            let class_count: Int
            let probabilities: [String]
            let prediction: String
            let reference: String
            let metrics: [String: [String]]
        }
        let versions: [String: String]
        let bins: Int
        let cases: [Case]
    }

    static let goldens = Result {
        let url = TestSupport.packageRoot.appendingPathComponent(
            "Tests/MetricsTests/Fixtures/calibration_goldens.json")
        return try JSONDecoder().decode(Goldens.self, from: Data(contentsOf: url))
    }

    @Test func calibrationMatchesScikitLearnAndTheNumpyReference() throws {
        let goldens = try Self.goldens.get()
        #expect(goldens.versions["scikit-learn"] == "1.9.1" && goldens.bins == 15)
        for golden in goldens.cases {
            func grid(_ digits: String) throws -> LabelGrid<UInt16> {
                try LabelGrid(
                    shape: golden.shape, spacing: golden.shape.map { _ in 1 },
                    labels: digits.utf8.map { UInt16($0 - 48) })
            }
            let metrics = try CaseMetrics(
                reference: grid(golden.reference), prediction: grid(golden.prediction),
                settings: EvaluationSettings(classCount: golden.class_count, calibrationBins: goldens.bins),
                probabilities: golden.probabilities.map { Float($0)! })
            for (name, expected) in golden.metrics {
                let ours = try #require(metrics.values[MetricName(name)], "\(name) missing")
                for c in 0..<golden.class_count {
                    #expect(
                        agree(ours[c], value(expected[c]), 1e-9),
                        "\(golden.name) class \(c) \(name): \(ours[c]) vs \(expected[c])")
                }
            }
        }
    }

    /// Without probabilities the calibration metrics are absent; asked for without them, one clear error.
    @Test func calibrationNeedsProbabilities() throws {
        let map = try LabelGrid(shape: [2, 2], spacing: [1, 1], labels: [UInt16]([0, 1, 1, 0]))
        let plain = try CaseMetrics(reference: map, prediction: map, settings: EvaluationSettings(classCount: 2))
        #expect(plain.values[.brier] == nil)
        #expect(throws: MetricsError.self) {
            try CaseMetrics(
                reference: map, prediction: map, settings: EvaluationSettings(classCount: 2, calibrationBins: 15))
        }
        #expect(throws: MetricsError.self) {
            try CaseMetrics(
                reference: map, prediction: map, settings: EvaluationSettings(classCount: 2, calibrationBins: 15),
                probabilities: [0.5, 0.5])
        }
    }

    /// The Mann–Whitney AUROC with ties counted half, on hand-made scores.
    @Test func aurocCountsTiesHalf() {
        let detections: [(entropy: Double, wrong: Bool)] = [(0.1, false), (0.5, true), (0.5, false), (0.9, true)]
        #expect(ClassCalibration.auroc(detections) == 0.875)
        #expect(ClassCalibration.auroc([(0.2, true), (0.3, true)]).isNaN)
    }

    /// The report's pooled reliability bins: over one case the ECE is `ClassCalibration`'s; over two it weighs
    /// each bin by its voxels, not each case equally.
    @Test func reliabilityBinsPoolVoxels() {
        var generator = SeededGenerator(seed: 3)
        let (frames, plane, k) = (2, 50, 3)
        var probabilities = [Float](repeating: 0, count: frames * k * plane)
        var reference = [Int32](repeating: 0, count: frames * plane)
        for frame in 0..<frames {
            for pixel in 0..<plane {
                let raw = (0..<k).map { _ in Float.random(in: 0.05...1, using: &generator) }
                let sum = raw.reduce(0, +)
                for c in 0..<k { probabilities[(frame * k + c) * plane + pixel] = raw[c] / sum }
                reference[frame * plane + pixel] = Int32.random(in: 0..<Int32(k), using: &generator)
            }
        }
        var bins = ReliabilityBins(classCount: k, bins: 15)
        bins.add(probabilities: probabilities, reference: reference, frames: frames)
        let labels = reference.map(UInt16.init)
        for c in 0..<k {
            let single = ClassCalibration(
                classIndex: c,
                probabilities: { kk, voxel in probabilities[((voxel / plane) * k + kk) * plane + voxel % plane] },
                classCount: k, reference: labels, prediction: labels, bins: 15)
            #expect(abs(bins.expectedCalibrationError(c) - single.expectedCalibrationError) < 1e-12)
            #expect(bins.points(c).map(\.count).reduce(0, +) == frames * plane)
        }
        var twice = bins
        twice.add(probabilities: probabilities, reference: reference, frames: frames)
        #expect(abs(twice.expectedCalibrationError(1) - bins.expectedCalibrationError(1)) < 1e-12)
    }
}
