import Classical
import Testing

@Suite struct ColorSpaceTests {
    static var golden: [String: Any] { Goldens.section("color") }

    /// skimage.color on a 9³ grid of the RGB cube plus 271 random points; tolerance 1e-4 absolute
    /// (L*a*b* values are O(100), so this is also ~1e-6 relative).
    @Test(arguments: [("gray", ColorSpace.gray), ("hsv", .hsv), ("lab", .lab), ("ycbcr", .yCbCr)])
    func conversionsMatchScikitImageOnTheRGBCube(key: String, space: ColorSpace) throws {
        let rgb = Goldens.doubles(Self.golden, "rgb")
        let expected = Goldens.doubles(Self.golden, key)
        #expect(rgb.count == 1000 * 3)
        let pixels = FeatureMatrix(count: rgb.count / 3, dimension: 3, values: rgb)
        let converted = try space.convert(pixels)
        #expect(converted.values.count == expected.count)
        let worst = zip(converted.values, expected).map { abs($0 - $1) }.max() ?? .infinity
        #expect(worst < 1e-4, "\(key): worst difference \(worst)")
    }

    @Test func normalisedRGBSumsToOneAndMapsBlackToTheGrayPoint() throws {
        let pixels = FeatureMatrix(count: 2, dimension: 3, values: [0.2, 0.3, 0.5, 0, 0, 0])
        let converted = try ColorSpace.rgbNormalized.convert(pixels)
        #expect(abs(converted.values[0] - 0.2) < 1e-12 && abs(converted.values[2] - 0.5) < 1e-12)
        #expect(converted.row(1).allSatisfy { abs($0 - 1.0 / 3) < 1e-12 })
    }

    @Test func colorSpacesRefuseGrayImagesAndNonFiniteValues() {
        let gray = FeatureMatrix(count: 2, dimension: 1, values: [1, 2])
        #expect(throws: ClassicalError.self) { try ColorSpace.lab.convert(gray) }
        let broken = FeatureMatrix(count: 2, dimension: 3, values: [0, 0, 0, .nan, 0, 0])
        #expect(throws: ClassicalError.nonFiniteValue(index: 1)) { try ColorSpace.rgb.convert(broken) }
    }

    @Test func standardisationGivesZeroMeanUnitVarianceAndLeavesConstantColumnsCentred() {
        let matrix = FeatureMatrix(count: 4, dimension: 2, values: [1, 5, 2, 5, 3, 5, 4, 5])
        let standardized = matrix.standardized()
        let (mean, variance) = standardized.columnMoments()
        #expect(abs(mean[0]) < 1e-12 && abs(variance[0] - 1) < 1e-12)
        #expect(abs(mean[1]) < 1e-12 && variance[1] == 0)
    }
}
