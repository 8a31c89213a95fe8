import Foundation
import SliceLabSupport
import Testing

@testable import DeepLab
@testable import DeepLabTraining

/// `--augment acquisition`: a bias field, a blur and a lower resolution change the image the way a second scanner
/// would, never the labels, and draw nothing when they are off.
struct AcquisitionAugmentationTests {
    /// Only the acquisition changes, each with probability 1 when named.
    static func configuration(bias: Bool = false, blur: Bool = false, lowResolution: Bool = false)
        -> AugmentationConfiguration
    {
        var configuration = AugmentationConfiguration.none()
        configuration.acquisition = AcquisitionAugmentation(
            biasFieldProbability: bias ? 1 : 0, biasFieldMagnitude: 0.1, blurProbability: blur ? 1 : 0,
            minimumBlurSigma: 0.8, maximumBlurSigma: 0.8, lowResolutionProbability: lowResolution ? 1 : 0,
            minimumResolutionZoom: 0.5)
        return configuration
    }

    static func augment(_ image: FloatTensor, _ configuration: AugmentationConfiguration, seed: UInt64 = 3) throws
        -> (image: FloatTensor, labels: LabelTensor)
    {
        let labels = LabelTensor(
            shape: Array(image.shape.dropFirst()),
            values: (0..<(image.shape[1] * image.shape[2])).map { Int32($0 % 3) })
        var random = SeededGenerator(seed: seed)
        return try Augmenter(configuration).augment(image: image, labels: labels, random: &random)
    }

    /// A noisy two-channel image (seeded).
    static func noisy(height: Int = 24, width: Int = 30) -> FloatTensor {
        var random = SeededGenerator(seed: 11)
        return FloatTensor(
            shape: [2, height, width], values: (0..<(2 * height * width)).map { _ in Float(random.uniform()) })
    }

    /// Switched off (probabilities 0) it draws nothing: the same sample as without it, bit for bit.
    @Test func offChangesNothingAndLabelsNeverChange() throws {
        let image = Self.noisy()
        var standard = AugmentationConfiguration()
        standard.cropSize = 20
        var off = standard
        off.acquisition = AcquisitionAugmentation(
            biasFieldProbability: 0, blurProbability: 0, lowResolutionProbability: 0)
        var on = standard
        on.acquisition = AcquisitionAugmentation(
            biasFieldProbability: 1, blurProbability: 1, lowResolutionProbability: 1)
        let (a, b, c) = try (Self.augment(image, standard), Self.augment(image, off), Self.augment(image, on))
        #expect(a.image == b.image && a.labels == b.labels)
        #expect(c.labels == a.labels && c.image != a.image)
    }

    /// The blur of an impulse is the separable Gaussian (σ 0.8, cut at 3σ = 3 pixels, normalised), computed here
    /// in Float64; a constant stays constant at the edges (replicated).
    @Test func blurIsTheNormalisedSeparableGaussian() throws {
        let (height, width) = (15, 17)
        var values = [Float](repeating: 0, count: height * width)
        values[7 * width + 8] = 1
        let out = try Self.augment(
            FloatTensor(shape: [1, height, width], values: values), Self.configuration(blur: true))
        let weights = (-3...3).map { exp(-Double($0 * $0) / (2 * 0.64)) }
        let total = weights.reduce(0, +)
        for y in 0..<height {
            for x in 0..<width {
                let (dy, dx) = (y - 7, x - 8)
                let expected = abs(dy) <= 3 && abs(dx) <= 3 ? weights[dy + 3] * weights[dx + 3] / (total * total) : 0
                #expect(abs(Double(out.image.values[y * width + x]) - expected) < 1e-6, "at \(y), \(x)")
            }
        }
        let constant = try Self.augment(
            FloatTensor(shape: [1, height, width], values: [Float](repeating: 2.5, count: height * width)),
            Self.configuration(blur: true))
        #expect(constant.image.values.allSatisfy { abs($0 - 2.5) < 1e-5 })
    }

    /// A bias field multiplies around the minimum by a gain within exp(±9 · 0.1) (nine Legendre terms, |P| ≤ 1),
    /// the same on every channel, whose logarithm is a polynomial of degree 3 in y and x: a least-squares fit of
    /// the ten monomials y^i·x^j (i + j ≤ 3) leaves no residual, and the field is not flat.
    @Test func biasFieldIsAPolynomialGainSharedByChannels() throws {
        let (height, width) = (32, 40)
        var values = [Float](repeating: 1, count: 2 * height * width)
        values[0] = 0  // the minimum the field is applied around
        let out = try Self.augment(
            FloatTensor(shape: [2, height, width], values: values), Self.configuration(bias: true))
        let plane = height * width
        #expect(out.image.values[0] == 0)
        let monomials = (0...3).flatMap { i in (0...(3 - i)).map { (i, $0) } }
        var normal = [[Double]](repeating: [Double](repeating: 0, count: 11), count: 10)
        var samples: [([Double], Double)] = []
        for o in 1..<plane {
            let gain = out.image.values[o]
            #expect(abs(out.image.values[plane + o] - gain) < 1e-6)
            #expect(gain >= Float(exp(-0.9)) - 1e-6 && gain <= Float(exp(0.9)) + 1e-6)
            let (ty, tx) = (
                2 * Double(o / width) / Double(height - 1) - 1, 2 * Double(o % width) / Double(width - 1) - 1
            )
            let row = monomials.map { pow(ty, Double($0.0)) * pow(tx, Double($0.1)) }
            samples.append((row, log(Double(gain))))
            for a in 0..<10 {
                for b in 0..<10 { normal[a][b] += row[a] * row[b] }
                normal[a][10] += row[a] * log(Double(gain))
            }
        }
        for column in 0..<10 {  // Gauss–Jordan with partial pivoting
            let pivot = (column..<10).max { abs(normal[$0][column]) < abs(normal[$1][column]) }!
            normal.swapAt(column, pivot)
            for r in 0..<10 where r != column {
                let f = normal[r][column] / normal[column][column]
                for c in column...10 { normal[r][c] -= f * normal[column][c] }
            }
        }
        let fit = (0..<10).map { normal[$0][10] / normal[$0][$0] }
        let residual = samples.map { row, value in abs(zip(row, fit).map(*).reduce(0, +) - value) }.max()!
        let spread = samples.map(\.1).max()! - samples.map(\.1).min()!
        #expect(residual < 1e-5 && spread > 1e-2, "residual \(residual), spread \(spread)")
    }

    /// A lower resolution keeps a constant and a linear ramp (away from the replicated edges) and loses a one-pixel
    /// checkerboard: at half the size exactly (every pixel the mean), at a drawn zoom never gaining variance (a
    /// zoom that rounds to the same size changes nothing).
    @Test func lowResolutionLosesFineDetailOnly() throws {
        let (height, width) = (32, 32)
        func variance(_ v: [Float]) -> Float {
            let mean = v.reduce(0, +) / Float(v.count)
            return v.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Float(v.count)
        }
        let board = (0..<(height * width)).map { Float(($0 / width + $0 % width) % 2) }
        let ramp = (0..<(height * width)).map { Float($0 % width) / Float(width) }
        let small = BilinearResampling.resample(
            board, planes: 1, rows: height, columns: width, toRows: height / 2, toColumns: width / 2)
        let half = BilinearResampling.resample(
            small, planes: 1, rows: height / 2, columns: width / 2, toRows: height, toColumns: width)
        #expect(half.allSatisfy { abs($0 - 0.5) < 1e-6 })
        let configuration = Self.configuration(lowResolution: true)
        var reduced = 0
        for seed in UInt64(1)...6 {
            let blurred = try Self.augment(
                FloatTensor(shape: [1, height, width], values: board), configuration, seed: seed)
            let smooth = try Self.augment(
                FloatTensor(shape: [1, height, width], values: ramp), configuration, seed: seed)
            let kept = zip(smooth.image.values, ramp).map { abs($0 - $1) }
            #expect(variance(blurred.image.values) <= variance(board) + 1e-6)
            if variance(blurred.image.values) < 0.6 * variance(board) { reduced += 1 }
            let inside = kept.enumerated().filter { i, _ in (3..<(width - 3)).contains(i % width) }
            #expect(inside.allSatisfy { $0.1 < 0.02 })
        }
        #expect(reduced >= 4)
        let constant = try Self.augment(
            FloatTensor(shape: [1, height, width], values: [Float](repeating: -1, count: height * width)), configuration
        )
        #expect(constant.image.values.allSatisfy { abs($0 + 1) < 1e-6 })
    }

    /// Checkpoints written before the option decode with it off; with it they round-trip; bad ranges are errors.
    @Test func decodesOlderConfigurationsAndValidates() throws {
        var standard = AugmentationConfiguration()
        let older = try JSONEncoder().encode(standard)
        #expect(!String(decoding: older, as: UTF8.self).contains("acquisition"))
        #expect(try JSONDecoder().decode(AugmentationConfiguration.self, from: older) == standard)
        standard.acquisition = AcquisitionAugmentation()
        let newer = try JSONEncoder().encode(standard)
        #expect(try JSONDecoder().decode(AugmentationConfiguration.self, from: newer) == standard)
        for bad in [
            AcquisitionAugmentation(blurProbability: 1.5), AcquisitionAugmentation(minimumBlurSigma: 2),
            AcquisitionAugmentation(minimumResolutionZoom: 0), AcquisitionAugmentation(biasFieldMagnitude: -1)
        ] {
            #expect(throws: TrainingError.self) { try Augmenter(AugmentationConfiguration(acquisition: bad)) }
        }
    }
}
