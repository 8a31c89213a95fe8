import Testing

@testable import Classical

@Suite struct ThresholdingTests {
    static var golden: [String: Any] { Goldens.section("otsu") }

    static func intensities(_ name: String) -> Intensities {
        let entry = golden[name] as? [String: Any] ?? [:]
        if (entry["dtype"] as? String) == "float64" { return .real(Goldens.doubles(entry, "values")) }
        return .integer(Goldens.ints(entry, "values"))
    }

    /// skimage.filters.threshold_otsu: the same bin centre (exact for integers, 1e-12 for float bin centres).
    @Test(arguments: ["uint8", "uint16", "float64"])
    func otsuMatchesScikitImage(name: String) throws {
        let entry = Self.golden[name] as? [String: Any] ?? [:]
        let threshold = try Thresholding.otsu(Self.intensities(name))
        let expected = (entry["otsu"] as? Double) ?? .nan
        #expect(abs(threshold - expected) <= 1e-12 * max(1, abs(expected)), "\(name): \(threshold) vs \(expected)")
    }

    /// skimage.filters.threshold_multiotsu for K = 2…5 on 8-bit (0…255), 16-bit (30000…30110) and float64
    /// (256 bins) images: the same thresholds (exact for integers, 1e-12 relative for float bin centres).
    @Test(arguments: ["uint8", "uint16", "float64"], 2...5)
    func multiOtsuMatchesScikitImage(name: String, classes: Int) throws {
        let entry = Self.golden[name] as? [String: Any] ?? [:]
        let thresholds = try Thresholding.multiOtsu(Self.intensities(name), classes: classes)
        let expected = Goldens.doubles(entry, "multiotsu\(classes)")
        #expect(thresholds.count == classes - 1)
        #expect(
            zip(thresholds, expected).allSatisfy { abs($0 - $1) <= 1e-12 * max(1, abs($1)) },
            "\(name) K=\(classes): \(thresholds) vs \(expected)")
    }

    @Test func multiOtsuWithExactlyKValuesReturnsTheFirstKMinusOne() throws {
        let entry = Self.golden["exactlyK"] as? [String: Any] ?? [:]
        let thresholds = try Thresholding.multiOtsu(.integer(Goldens.ints(entry, "values")), classes: 4)
        #expect(thresholds == Goldens.doubles(entry, "multiotsu4"))
    }

    @Test func multiOtsuRefusesMoreClassesThanValuesAndEmptyImages() {
        #expect(throws: ClassicalError.tooFewDistinctValues(classes: 4, distinct: 2)) {
            try Thresholding.multiOtsu(.integer([3, 3, 7]), classes: 4)
        }
        #expect(throws: ClassicalError.emptyInput("the image")) { try Thresholding.multiOtsu(.real([]), classes: 2) }
        #expect(throws: ClassicalError.nonFiniteValue(index: 1)) {
            try Thresholding.multiOtsu(.real([0, .infinity, 2]), classes: 2)
        }
    }

    @Test func otsuOfAConstantImageIsItsValue() throws {
        #expect(try Thresholding.otsu(.real([2.5, 2.5, 2.5])) == 2.5)
    }

    /// The dynamic-programming search maximises the same objective as the exhaustive one.
    @Test func dynamicProgrammingFindsTheExhaustiveOptimum() throws {
        let histogram = try Histogram(Self.intensities("uint8"))
        let total = Double(histogram.counts.reduce(0, +))
        let probabilities = histogram.counts.map { Float(Double($0) / total) }
        for thresholds in 1...3 {
            #expect(
                Thresholding.dynamicProgrammingIndices(probabilities, thresholdCount: thresholds)
                    == Thresholding.exhaustiveIndices(probabilities, thresholdCount: thresholds))
        }
    }

    /// Wide 16-bit histograms skip the n(n+1)/2 table; the terms computed on the fly are the table's.
    @Test func searchWithoutTheTableMatchesTheTable() throws {
        let histogram = try Histogram(Self.intensities("uint16"))
        let total = Double(histogram.counts.reduce(0, +))
        let probabilities = histogram.counts.map { Float(Double($0) / total) }
        for thresholds in 1...3 {
            #expect(
                Thresholding.exhaustiveIndicesWithoutTable(probabilities, thresholdCount: thresholds)
                    == Thresholding.exhaustiveIndices(probabilities, thresholdCount: thresholds))
        }
        // More than five classes take the generic search: the same answer with and without the table, and the
        // dynamic programme's optimum.
        let counts = [5, 9, 2, 0, 7, 13, 1, 4, 4, 8, 0, 3, 12, 6, 2, 9, 1, 5, 7, 3]
        let small = counts.map { Float(Double($0) / Double(counts.reduce(0, +))) }
        let generic = Thresholding.exhaustiveIndices(small, thresholdCount: 6)
        #expect(generic == Thresholding.exhaustiveIndicesWithoutTable(small, thresholdCount: 6))
        #expect(generic == Thresholding.dynamicProgrammingIndices(small, thresholdCount: 6))
    }

    @Test func digitizePutsValuesOnAThresholdInTheUpperClass() {
        #expect(Thresholding.digitize([0, 1, 1.5, 2, 3], thresholds: [1, 2]) == [0, 1, 1, 2, 2])
    }
}
