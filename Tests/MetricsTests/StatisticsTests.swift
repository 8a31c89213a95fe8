import Metrics
import SliceLabSupport
import Testing

/// Descriptive statistics against numpy, the Wilcoxon test against scipy.stats.wilcoxon (committed goldens).
@Suite struct StatisticsTests {
    static let goldens = Result { try Goldens.load() }

    @Test func percentilesMedianAndStdMatchNumpyToOneInATrillion() throws {
        for golden in try Self.goldens.get().wilcoxon {
            let d = golden.differences.map(value)
            #expect(agree(Statistics.mean(d), value(golden.mean), 1e-12), "\(golden.name) mean")
            #expect(
                agree(Statistics.standardDeviation(d, ddof: 1), value(golden.std_ddof1), 1e-12), "\(golden.name) std")
            for (q, expected) in [
                (50.0, golden.median), (25, golden.q25), (75, golden.q75), (95, golden.p95),
                (2.5, golden.p2_5)
            ] {
                #expect(agree(Statistics.percentile(d, q), value(expected), 1e-12), "\(golden.name) q\(q)")
            }
            let summary = MetricSummary(d, seed: 1)
            #expect(summary.interquartileRange == summary.upperQuartile - summary.lowerQuartile)
            #expect(agree(summary.median, value(golden.median), 1e-12))
        }
    }

    /// Exact distribution (n ≤ 50, no ties or zeros), exact sign-flip enumeration (n ≤ 13 with ties or zeros),
    /// normal approximation otherwise: statistic exact, p within 1e-12 relative.
    @Test func wilcoxonMatchesScipyDefaultsInEveryRegime() throws {
        var methods = Set<String>()
        for golden in try Self.goldens.get().wilcoxon {
            let test = WilcoxonSignedRank(differences: golden.differences.map(value))
            methods.insert(test.method.rawValue)
            #expect(test.statistic == value(golden.statistic), "\(golden.name) statistic")
            let expected = value(golden.pvalue)
            #expect(
                abs(test.pValue - expected) <= 1e-12 * max(expected, 1e-300) + 1e-15,
                "\(golden.name) (\(test.method)): \(test.pValue) vs scipy \(expected)")
        }
        #expect(methods == ["exact", "permutation", "normal"])
    }

    @Test func bootstrapIsSeededAndBracketsTheMean() {
        var generator = SeededGenerator(seed: 11)
        let values = (0..<40).map { _ in Double(generator.next() % 1000) / 100 }
        let a = Statistics.bootstrapMeanInterval(values, seed: 5)
        let b = Statistics.bootstrapMeanInterval(values, seed: 5)
        let c = Statistics.bootstrapMeanInterval(values, seed: 6)
        #expect(a == b)
        #expect(a != c)
        let mean = Statistics.mean(values)
        #expect(a.low < mean && mean < a.high)
        // The interval narrows as the standard error does: roughly ±1.96·s/√n.
        let se = Statistics.standardDeviation(values) / Double(values.count).squareRoot()
        #expect(abs((a.high - a.low) / (2 * 1.96 * se) - 1) < 0.15)
    }

    @Test func summaryExcludesNaNCountsItAndKeepsInfinity() {
        let summary = MetricSummary([0.5, .nan, 0.7, .nan, 0.9], seed: 0)
        #expect(summary.validCount == 3 && summary.nanCount == 2 && summary.infiniteCount == 0)
        #expect(abs(summary.mean - 0.7) < 1e-15)
        #expect(abs(summary.standardDeviation - 0.2) < 1e-15)
        let failed = MetricSummary([1, 2, .infinity], seed: 0)
        #expect(failed.mean == .infinity && failed.infiniteCount == 1 && failed.median == 2)
        #expect(MetricSummary([], seed: 0).row[5] == 0)
    }

    @Test func pairedComparisonDropsIncompletePairsAndRefusesUnequalRuns() throws {
        let comparison = try PairedComparison([0.9, 0.8, .nan, 0.7, 0.95], [0.85, 0.82, 0.5, 0.6, 0.9], seed: 3)
        #expect(comparison.pairCount == 4)
        #expect(abs(comparison.meanDifference - (0.05 - 0.02 + 0.1 + 0.05) / 4) < 1e-12)
        #expect(
            comparison.confidenceLow <= comparison.meanDifference
                && comparison.meanDifference <= comparison.confidenceHigh)
        #expect(throws: MetricsError.self) { try PairedComparison([1, 2], [1], seed: 0) }
    }
}
