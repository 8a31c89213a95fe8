import Foundation
import SliceLabSupport
import Testing

@testable import Classical

@Suite struct HistogramModesTests {
    /// Three well-separated Gaussian modes (means 0, 10, 20; σ 1) drawn from a seeded generator.
    static func trimodal() -> [Double] {
        var generator = SeededGenerator(seed: 3)
        return (0..<3000).map { index in
            let (u, v) = (max(generator.uniform(), 1e-12), generator.uniform())
            let normal = (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)
            return Double(index % 3) * 10 + normal
        }
    }

    @Test func valleysFallBetweenTheModes() throws {
        let thresholds = try HistogramModes.valleyThresholds(Self.trimodal(), classes: 3)
        #expect(thresholds.count == 2)
        #expect(thresholds[0] > 3 && thresholds[0] < 7, "\(thresholds)")
        #expect(thresholds[1] > 13 && thresholds[1] < 17, "\(thresholds)")
    }

    @Test func valleysRefuseMoreModesThanTheHistogramHas() {
        #expect(throws: ClassicalError.self) {
            try HistogramModes.valleyThresholds([1, 1, 1, 2, 2, 2], classes: 5)
        }
    }

    @Test func colorPeaksFindTheThreeColorClouds() throws {
        let base = Self.trimodal()
        var values: [Double] = []
        for (index, value) in base.enumerated() {
            let cluster = Double(index % 3)
            values += [value, 20 - value + 0.1 * cluster, cluster * 5 + 0.3 * (value - cluster * 10)]
        }
        let points = FeatureMatrix(count: base.count, dimension: 3, values: values)
        let centers = try HistogramModes.colorPeaks(points, classes: 3)
        let firstChannel = (0..<3).map { centers.values[$0 * 3] }.sorted()
        for (found, expected) in zip(firstChannel, [0.0, 10, 20]) {
            #expect(abs(found - expected) < 2, "\(firstChannel)")
        }
    }

    @Test func colorPeaksWorkOnTwoChannelHistograms() throws {
        let base = Self.trimodal()
        var values: [Double] = []
        for (index, value) in base.enumerated() { values += [value, Double(index % 3) * 4 + 0.2 * value] }
        let centers = try HistogramModes.colorPeaks(
            FeatureMatrix(count: base.count, dimension: 2, values: values),
            classes: 3, binsPerAxis: 48)
        let firstChannel = (0..<3).map { centers.values[$0 * 2] }.sorted()
        for (found, expected) in zip(firstChannel, [0.0, 10, 20]) {
            #expect(abs(found - expected) < 2, "\(firstChannel)")
        }
        #expect(throws: ClassicalError.self) {
            try HistogramModes.colorPeaks(FeatureMatrix(count: 2, dimension: 1, values: [0, 1]), classes: 2)
        }
    }

    @Test func smoothingPreservesMassAwayFromEdges() {
        var histogram = [Double](repeating: 0, count: 41)
        histogram[20] = 1
        let smoothed = HistogramModes.smooth(histogram, extents: [41], sigma: 2)
        #expect(abs(smoothed.reduce(0, +) - 1) < 1e-12)
        #expect(HistogramModes.localMaxima(smoothed) == [20])
    }
}
