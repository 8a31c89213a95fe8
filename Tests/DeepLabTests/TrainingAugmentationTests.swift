import Foundation
import SliceLabSupport
import Testing

@testable import DeepLab
@testable import DeepLabTraining

/// The augmenter moves image and labels together, keeps label values, crops and pads exactly, and is fixed
/// by its seed.
struct TrainingAugmentationTests {
    /// A [1, H, W] image whose value is 10·(label) plus a small ramp, and its labels: three blocks of classes.
    static func sample(height: Int = 40, width: Int = 48) -> (FloatTensor, LabelTensor) {
        var labels = [Int32](repeating: 0, count: height * width)
        for y in 0..<height {
            for x in 0..<width {
                if (8..<20).contains(y) && (6..<30).contains(x) { labels[y * width + x] = 1 }
                if (24..<36).contains(y) && (20..<44).contains(x) { labels[y * width + x] = 2 }
            }
        }
        let image = labels.map { Float($0) * 10 }
        return (
            FloatTensor(shape: [1, height, width], values: image), LabelTensor(shape: [height, width], values: labels)
        )
    }

    @Test func noAugmentationReturnsTheSampleUnchanged() throws {
        let (image, labels) = Self.sample()
        var random = SeededGenerator(seed: 1)
        let out = try Augmenter(.none()).augment(image: image, labels: labels, random: &random)
        #expect(out.image == image && out.labels == labels)
    }

    @Test func horizontalFlipMirrorsImageAndLabelsExactly() throws {
        let (image, labels) = Self.sample(height: 5, width: 7)
        var configuration = AugmentationConfiguration.none()
        configuration.horizontalFlipProbability = 1
        var random = SeededGenerator(seed: 2)
        let out = try Augmenter(configuration).augment(image: image, labels: labels, random: &random)
        for y in 0..<5 {
            for x in 0..<7 {
                #expect(out.labels.values[y * 7 + x] == labels.values[y * 7 + 6 - x])
                #expect(out.image.values[y * 7 + x] == image.values[y * 7 + 6 - x])
            }
        }
    }

    @Test func cropIsAnExactWindowAndPadsSmallImagesWithTheFills() throws {
        let values = (0..<(6 * 6)).map { Float($0) }
        let image = FloatTensor(shape: [1, 6, 6], values: values)
        let labels = LabelTensor(shape: [6, 6], values: (0..<36).map { Int32($0 % 3) })
        var random = SeededGenerator(seed: 3)
        let small = try Augmenter(.none(cropSize: 3)).augment(image: image, labels: labels, random: &random)
        let first = try #require(values.firstIndex(of: small.image.values[0]))
        let (top, left) = (first / 6, first % 6)
        for i in 0..<3 {
            for j in 0..<3 {
                #expect(small.image.values[i * 3 + j] == values[(top + i) * 6 + left + j])
                #expect(small.labels.values[i * 3 + j] == labels.values[(top + i) * 6 + left + j])
            }
        }
        let large = try Augmenter(.none(cropSize: 10)).augment(image: image, labels: labels, random: &random)
        #expect(large.image.shape == [1, 10, 10])
        #expect(large.labels.values[0] == -100 && large.image.values[0] == 0)
        // Centred: 2 rows and columns of padding.
        #expect(large.image.values[2 * 10 + 2] == 0 && large.image.values[2 * 10 + 3] == 1)
        #expect(large.labels.values.filter { $0 == -100 }.count == 100 - 36)
    }

    /// After rotation, zoom, flips and elastic deformation the labels still sit where the image says they are:
    /// on pixels whose bilinear image value is a pure class level, the label is that class (≥ 99 % of them).
    @Test func geometryIsIdenticalForImageAndLabels() throws {
        let (image, labels) = Self.sample()
        let configuration = AugmentationConfiguration(
            cropSize: 32, horizontalFlipProbability: 0.5,
            verticalFlipProbability: 0.5, rotationDegrees: 40,
            minimumScale: 0.7, maximumScale: 1.4, brightness: 0,
            contrast: 0, gammaProbability: 0, noiseStandardDeviation: 0,
            elasticMagnitude: 3)
        let augmenter = try Augmenter(configuration)
        var random = SeededGenerator(seed: 4)
        var (agree, checked) = (0, 0)
        for _ in 0..<20 {
            let out = try augmenter.augment(image: image, labels: labels, random: &random)
            #expect(Set(out.labels.values).isSubset(of: [0, 1, 2, -100]), "nearest keeps label values")
            for (value, label) in zip(out.image.values, out.labels.values) where label != -100 {
                guard [0, 10, 20].contains(value) else { continue }
                checked += 1
                if Float(label) * 10 == value { agree += 1 }
            }
        }
        #expect(checked > 5000)
        #expect(Double(agree) >= 0.99 * Double(checked), "\(agree) of \(checked)")
    }

    @Test func sameSeedSameSampleOtherSeedOtherSample() throws {
        let (image, labels) = Self.sample()
        let augmenter = try Augmenter(AugmentationConfiguration(cropSize: 24, elasticMagnitude: 2))
        var a = SeededGenerator(seed: 7)
        var b = SeededGenerator(seed: 7)
        var c = SeededGenerator(seed: 8)
        let first = try augmenter.augment(image: image, labels: labels, random: &a)
        let second = try augmenter.augment(image: image, labels: labels, random: &b)
        let third = try augmenter.augment(image: image, labels: labels, random: &c)
        #expect(first.image == second.image && first.labels == second.labels && a == b)
        #expect(first.image != third.image)
    }

    @Test func classBalancedCropsAlwaysContainAForegroundClass() throws {
        var labels = [Int32](repeating: 0, count: 100 * 100)
        labels[77 * 100 + 13] = 2  // one foreground pixel in a large background
        let image = FloatTensor(zeros: [1, 100, 100])
        var configuration = AugmentationConfiguration.none(cropSize: 16)
        configuration.classBalancedCropProbability = 1
        let augmenter = try Augmenter(configuration)
        var random = SeededGenerator(seed: 5)
        for _ in 0..<10 {
            let out = try augmenter.augment(
                image: image, labels: LabelTensor(shape: [100, 100], values: labels),
                random: &random)
            #expect(out.labels.values.contains(2))
        }
    }

    /// Noise σ = 0.1 on 128² pixels: the sample standard deviation is within 3 % of σ (its own standard error is
    /// about 0.6 %).
    @Test func gaussianNoiseHasTheConfiguredSpread() throws {
        let image = FloatTensor(zeros: [1, 128, 128])
        let labels = LabelTensor(shape: [128, 128], values: [Int32](repeating: 0, count: 128 * 128))
        var configuration = AugmentationConfiguration.none()
        configuration.noiseStandardDeviation = 0.1
        var random = SeededGenerator(seed: 6)
        let out = try Augmenter(configuration).augment(image: image, labels: labels, random: &random)
        let mean = out.image.values.reduce(0, +) / Float(out.image.values.count)
        let spread =
            (out.image.values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +)
            / Float(out.image.values.count)).squareRoot()
        #expect(abs(spread - 0.1) < 0.003 && abs(mean) < 0.003)
    }

    @Test func badRangesAreTypedErrors() {
        #expect(throws: TrainingError.self) {
            try Augmenter(AugmentationConfiguration(minimumScale: 2, maximumScale: 1))
        }
        #expect(throws: TrainingError.self) { try Augmenter(AugmentationConfiguration(horizontalFlipProbability: 2)) }
    }

    @Test func randomStateRoundTripsAndContinuesTheSequence() throws {
        var random = SeededGenerator(seed: 42)
        _ = (0..<5).map { _ in random.next() }
        var copy = try #require(SeededGenerator(state: random.state))
        #expect((0..<10).map { _ in random.next() } == (0..<10).map { _ in copy.next() })
        #expect(SeededGenerator(state: [0, 0, 0, 0]) == nil)
    }
}
