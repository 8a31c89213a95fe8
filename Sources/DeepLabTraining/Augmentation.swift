import DeepLab
import Foundation
import SliceLabSupport

/// What the augmenter does to each training sample, and how strongly. Stored with the checkpoint's training
/// configuration. The default is a moderate set for grayscale medical slices; `.none` changes nothing.
public struct AugmentationConfiguration: Codable, Equatable, Sendable {
    /// Output height and width in pixels (a random crop, padded where the image is smaller), or nil to keep
    /// the image's size.
    public var cropSize: Int?
    public var horizontalFlipProbability: Double
    public var verticalFlipProbability: Double
    /// Rotation drawn uniformly in ±`rotationDegrees`.
    public var rotationDegrees: Double
    /// Zoom factor drawn uniformly in `minimumScale...maximumScale` (> 1 enlarges).
    public var minimumScale: Double
    public var maximumScale: Double
    /// Probability of centring the crop on a pixel of a randomly chosen foreground class present in the image
    /// (class-balanced crop sampling, after nnU-Net's foreground oversampling).
    public var classBalancedCropProbability: Double
    /// Additive brightness drawn in ±`brightness` (intensity units after preprocessing).
    public var brightness: Double
    /// Contrast factor drawn in 1 ± `contrast`, applied around the image's mean.
    public var contrast: Double
    /// Probability of a gamma change, with γ drawn in `minimumGamma...maximumGamma`, on the image's min–max range.
    public var gammaProbability: Double
    public var minimumGamma: Double
    public var maximumGamma: Double
    /// Standard deviation of additive Gaussian noise (intensity units after preprocessing); 0 disables it.
    public var noiseStandardDeviation: Double
    /// Largest elastic displacement in pixels (0 disables), drawn on a coarse grid of
    /// `elasticControlPoints`² points and interpolated bilinearly.
    public var elasticMagnitude: Double
    public var elasticControlPoints: Int
    /// The image value outside the source image.
    public var imageFill: Float
    /// The label outside the source image (the loss's ignore label by default).
    public var labelFill: Int32
    /// Changes a second scanner would make (bias field, blur, lower resolution), drawn before the intensity
    /// changes above; nil (the default) draws none of them.
    public var acquisition: AcquisitionAugmentation?

    public init(
        cropSize: Int? = nil, horizontalFlipProbability: Double = 0.5, verticalFlipProbability: Double = 0,
        rotationDegrees: Double = 15, minimumScale: Double = 0.85, maximumScale: Double = 1.15,
        classBalancedCropProbability: Double = 0, brightness: Double = 0.1, contrast: Double = 0.1,
        gammaProbability: Double = 0.3, minimumGamma: Double = 0.7, maximumGamma: Double = 1.5,
        noiseStandardDeviation: Double = 0.02, elasticMagnitude: Double = 0, elasticControlPoints: Int = 4,
        imageFill: Float = 0, labelFill: Int32 = -100, acquisition: AcquisitionAugmentation? = nil
    ) {
        self.cropSize = cropSize
        self.horizontalFlipProbability = horizontalFlipProbability
        self.verticalFlipProbability = verticalFlipProbability
        self.rotationDegrees = rotationDegrees
        self.minimumScale = minimumScale
        self.maximumScale = maximumScale
        self.classBalancedCropProbability = classBalancedCropProbability
        self.brightness = brightness
        self.contrast = contrast
        self.gammaProbability = gammaProbability
        self.minimumGamma = minimumGamma
        self.maximumGamma = maximumGamma
        self.noiseStandardDeviation = noiseStandardDeviation
        self.elasticMagnitude = elasticMagnitude
        self.elasticControlPoints = elasticControlPoints
        self.imageFill = imageFill
        self.labelFill = labelFill
        self.acquisition = acquisition
    }

    /// No augmentation at all (optionally still cropping).
    public static func none(cropSize: Int? = nil) -> AugmentationConfiguration {
        AugmentationConfiguration(
            cropSize: cropSize, horizontalFlipProbability: 0, rotationDegrees: 0,
            minimumScale: 1, maximumScale: 1, brightness: 0, contrast: 0, gammaProbability: 0,
            noiseStandardDeviation: 0)
    }

    /// Checks the ranges.
    ///
    /// - Throws: `TrainingError.invalidConfiguration` naming the first bad value.
    public func validate() throws {
        func check(_ condition: Bool, _ message: String) throws {
            if !condition { throw TrainingError.invalidConfiguration("augmentation: \(message)") }
        }
        try check(cropSize.map { $0 > 0 } ?? true, "the crop size must be positive")
        for (name, p) in [
            ("horizontal flip", horizontalFlipProbability), ("vertical flip", verticalFlipProbability),
            ("class-balanced crop", classBalancedCropProbability), ("gamma", gammaProbability)
        ] {
            try check((0...1).contains(p), "the \(name) probability \(p) is outside 0...1")
        }
        try check(minimumScale > 0 && minimumScale <= maximumScale, "scales must satisfy 0 < minimum ≤ maximum")
        try check(minimumGamma > 0 && minimumGamma <= maximumGamma, "gammas must satisfy 0 < minimum ≤ maximum")
        try check(
            rotationDegrees >= 0 && brightness >= 0 && contrast >= 0 && contrast < 1
                && noiseStandardDeviation >= 0 && elasticMagnitude >= 0, "magnitudes must be ≥ 0 (contrast < 1)")
        try check(elasticControlPoints >= 2, "elastic deformation needs at least 2 control points per axis")
        if let a = acquisition {
            for (name, p) in [
                ("bias field", a.biasFieldProbability), ("blur", a.blurProbability),
                ("low resolution", a.lowResolutionProbability)
            ] {
                try check((0...1).contains(p), "the \(name) probability \(p) is outside 0...1")
            }
            try check(a.biasFieldMagnitude >= 0, "the bias field's magnitude must be ≥ 0")
            try check(
                a.minimumBlurSigma > 0 && a.minimumBlurSigma <= a.maximumBlurSigma && a.maximumBlurSigma <= 8,
                "blur sigmas must satisfy 0 < minimum ≤ maximum ≤ 8 pixels")
            try check(
                a.minimumResolutionZoom >= 0.1 && a.minimumResolutionZoom <= 1,
                "the lowest resolution zoom must be in 0.1...1")
        }
    }
}

/// What a different scanner or protocol does to an image, after nnU-Net's default training transforms (Gaussian
/// blur, simulated low resolution) and MONAI's `RandBiasField`; each drawn per sample with its probability.
public struct AcquisitionAugmentation: Codable, Equatable, Sendable {
    /// A smooth multiplicative field exp(Σ c_ij·P_i(y)·P_j(x)), Legendre polynomials of degree i + j ≤ 3 over the
    /// sample (the constant term left out: contrast covers it), c_ij drawn in ±`biasFieldMagnitude`; applied
    /// around the sample's minimum.
    public var biasFieldProbability: Double
    public var biasFieldMagnitude: Double
    /// A Gaussian blur with σ drawn in `minimumBlurSigma...maximumBlurSigma` pixels.
    public var blurProbability: Double
    public var minimumBlurSigma: Double
    public var maximumBlurSigma: Double
    /// Resampled (bilinear) to a zoom drawn in `minimumResolutionZoom...1` of its size and back.
    public var lowResolutionProbability: Double
    public var minimumResolutionZoom: Double

    /// nnU-Net's probabilities and ranges for blur (0.2, σ 0.5–1) and low resolution (0.25, zoom 0.5–1); a
    /// bias field on 0.3 of the samples with coefficients in ±0.1.
    public init(
        biasFieldProbability: Double = 0.3, biasFieldMagnitude: Double = 0.1, blurProbability: Double = 0.2,
        minimumBlurSigma: Double = 0.5, maximumBlurSigma: Double = 1, lowResolutionProbability: Double = 0.25,
        minimumResolutionZoom: Double = 0.5
    ) {
        self.biasFieldProbability = biasFieldProbability
        self.biasFieldMagnitude = biasFieldMagnitude
        self.blurProbability = blurProbability
        self.minimumBlurSigma = minimumBlurSigma
        self.maximumBlurSigma = maximumBlurSigma
        self.lowResolutionProbability = lowResolutionProbability
        self.minimumResolutionZoom = minimumResolutionZoom
    }

    /// Draws and applies the changes to one sample [C, H, W] in place (the same draw for every channel).
    func apply(_ values: inout [Float], channels: Int, height: Int, width: Int, random: inout SeededGenerator) {
        let plane = height * width
        if biasFieldProbability > 0, random.bernoulli(biasFieldProbability) {
            let terms = (0...3).flatMap { i in (0...(3 - i)).map { (i, $0) } }.filter { $0 != (0, 0) }
            let coefficients = terms.map { _ in random.uniform(-biasFieldMagnitude...biasFieldMagnitude) }
            func legendre(_ degree: Int, _ t: Double) -> Double {
                switch degree {
                case 0: return 1
                case 1: return t
                case 2: return (3 * t * t - 1) / 2
                default: return (5 * t * t * t - 3 * t) / 2
                }
            }
            let low = values.min() ?? 0
            for y in 0..<height {
                let ty = height > 1 ? 2 * Double(y) / Double(height - 1) - 1 : 0
                for x in 0..<width {
                    let tx = width > 1 ? 2 * Double(x) / Double(width - 1) - 1 : 0
                    var exponent = 0.0
                    for (term, c) in zip(terms, coefficients) {
                        exponent += c * legendre(term.0, ty) * legendre(term.1, tx)
                    }
                    let gain = Float(exp(exponent))
                    for k in 0..<channels {
                        let o = k * plane + y * width + x
                        values[o] = low + (values[o] - low) * gain
                    }
                }
            }
        }
        if blurProbability > 0, random.bernoulli(blurProbability) {
            let sigma =
                maximumBlurSigma > minimumBlurSigma
                ? random.uniform(minimumBlurSigma...maximumBlurSigma) : minimumBlurSigma
            for k in 0..<channels {
                Self.blur(&values, offset: k * plane, height: height, width: width, sigma: sigma)
            }
        }
        if lowResolutionProbability > 0, random.bernoulli(lowResolutionProbability) {
            let zoom = minimumResolutionZoom < 1 ? random.uniform(minimumResolutionZoom...1) : 1
            let (smallHeight, smallWidth) = (
                max(1, Int((Double(height) * zoom).rounded())), max(1, Int((Double(width) * zoom).rounded()))
            )
            let small = BilinearResampling.resample(
                values, planes: channels, rows: height, columns: width, toRows: smallHeight, toColumns: smallWidth)
            values = BilinearResampling.resample(
                small, planes: channels, rows: smallHeight, columns: smallWidth, toRows: height, toColumns: width)
        }
    }

    /// A separable Gaussian blur of one plane, edges replicated, the kernel cut at 3σ and normalised.
    static func blur(_ values: inout [Float], offset: Int, height: Int, width: Int, sigma: Double) {
        let radius = max(1, Int((3 * sigma).rounded(.up)))
        var kernel = (-radius...radius).map { Float(exp(-Double($0 * $0) / (2 * sigma * sigma))) }
        let total = kernel.reduce(0, +)
        kernel = kernel.map { $0 / total }
        var rows = [Float](repeating: 0, count: height * width)
        for y in 0..<height {
            for x in 0..<width {
                var sum: Float = 0
                for (t, w) in kernel.enumerated() {
                    sum += w * values[offset + y * width + min(max(x + t - radius, 0), width - 1)]
                }
                rows[y * width + x] = sum
            }
        }
        for y in 0..<height {
            for x in 0..<width {
                var sum: Float = 0
                for (t, w) in kernel.enumerated() {
                    sum += w * rows[min(max(y + t - radius, 0), height - 1) * width + x]
                }
                values[offset + y * width + x] = sum
            }
        }
    }
}

/// Applies the same random geometric transform to an image [C, H, W] (bilinear) and its labels [H, W]
/// (nearest), then intensity changes to the image alone. Every draw comes from the caller's `SeededGenerator`,
/// so a seed fixes the result.
public struct Augmenter: Sendable {
    public let configuration: AugmentationConfiguration

    public init(_ configuration: AugmentationConfiguration) throws {
        try configuration.validate()
        self.configuration = configuration
    }

    /// One augmented sample.
    ///
    /// - Parameter focusClass: a label the crop is centred on (a pixel of it drawn uniformly) instead of the
    ///   usual choice, when the sample holds it: the class a class-balanced slice was drawn for.
    /// - Throws: `TrainingError.shapeMismatch` unless the image is [C, H, W] and the labels [H, W].
    public func augment(
        image: FloatTensor, labels: LabelTensor, random: inout SeededGenerator,
        focusClass: Int32? = nil
    ) throws
        -> (image: FloatTensor, labels: LabelTensor)
    {
        guard image.shape.count == 3, labels.shape == [image.shape[1], image.shape[2]] else {
            throw TrainingError.shapeMismatch(
                what: "augmentation labels [H, W] for image \(image.shape)",
                expected: Array(image.shape.dropFirst()), actual: labels.shape)
        }
        let c = configuration
        let (height, width) = (image.shape[1], image.shape[2])
        let outputHeight = c.cropSize ?? height
        let outputWidth = c.cropSize ?? width
        // Geometry, drawn in a fixed order.
        let flipX = random.bernoulli(c.horizontalFlipProbability) ? -1.0 : 1.0
        let flipY = random.bernoulli(c.verticalFlipProbability) ? -1.0 : 1.0
        let angle = c.rotationDegrees > 0 ? random.uniform(-c.rotationDegrees...c.rotationDegrees) * .pi / 180 : 0
        let scale = c.maximumScale > c.minimumScale ? random.uniform(c.minimumScale...c.maximumScale) : c.minimumScale
        let (top, left) = cropOrigin(
            labels: labels, outputHeight: outputHeight, outputWidth: outputWidth,
            focusClass: focusClass, random: &random)
        let displacement = elasticField(outputHeight: outputHeight, outputWidth: outputWidth, random: &random)
        // Output pixel centre offset (dy, dx) from the crop centre maps to the source point
        // centre + R(angle)·(flip·(dy, dx) + elastic) / scale, in pixel-centre coordinates.
        let (centreY, centreX) = (Double(top) + Double(outputHeight) / 2, Double(left) + Double(outputWidth) / 2)
        let (cosine, sine) = (cos(angle) / scale, sin(angle) / scale)
        let isIdentity = angle == 0 && scale == 1 && flipX == 1 && flipY == 1 && displacement == nil
        let channels = image.shape[0]
        var outImage = [Float](repeating: c.imageFill, count: channels * outputHeight * outputWidth)
        var outLabels = [Int32](repeating: c.labelFill, count: outputHeight * outputWidth)
        for i in 0..<outputHeight {
            for j in 0..<outputWidth {
                let o = i * outputWidth + j
                if isIdentity {  // an integer shift: copy exactly
                    let (y, x) = (top + i, left + j)
                    guard y >= 0, y < height, x >= 0, x < width else { continue }
                    outLabels[o] = labels.values[y * width + x]
                    for k in 0..<channels {
                        outImage[k * outputHeight * outputWidth + o] = image.values[(k * height + y) * width + x]
                    }
                    continue
                }
                var dy = flipY * (Double(i) + 0.5 - Double(outputHeight) / 2)
                var dx = flipX * (Double(j) + 0.5 - Double(outputWidth) / 2)
                if let displacement {
                    dy += displacement[2 * o]
                    dx += displacement[2 * o + 1]
                }
                let y = centreY + cosine * dy - sine * dx - 0.5  // continuous index, pixel centres at integers
                let x = centreX + sine * dy + cosine * dx - 0.5
                let (ny, nx) = (Int((y + 0.5).rounded(.down)), Int((x + 0.5).rounded(.down)))
                guard ny >= 0, ny < height, nx >= 0, nx < width else { continue }
                outLabels[o] = labels.values[ny * width + nx]
                let y0 = min(max(Int(y.rounded(.down)), 0), height - 1)
                let x0 = min(max(Int(x.rounded(.down)), 0), width - 1)
                let y1 = min(y0 + 1, height - 1)
                let x1 = min(x0 + 1, width - 1)
                let fy = Float(min(max(y - Double(y0), 0), 1))
                let fx = Float(min(max(x - Double(x0), 0), 1))
                for k in 0..<channels {
                    let plane = k * height * width
                    let a = image.values[plane + y0 * width + x0]
                    let b = image.values[plane + y0 * width + x1]
                    let d = image.values[plane + y1 * width + x0]
                    let e = image.values[plane + y1 * width + x1]
                    outImage[k * outputHeight * outputWidth + o] =
                        (a * (1 - fx) + b * fx) * (1 - fy) + (d * (1 - fx) + e * fx) * fy
                }
            }
        }
        configuration.acquisition?.apply(
            &outImage, channels: channels, height: outputHeight, width: outputWidth, random: &random)
        adjustIntensity(&outImage, random: &random)
        return (
            FloatTensor(shape: [channels, outputHeight, outputWidth], values: outImage),
            LabelTensor(shape: [outputHeight, outputWidth], values: outLabels)
        )
    }

    /// The crop's top-left corner in the source: centred on a foreground pixel of a random present class with
    /// probability `classBalancedCropProbability`, else uniform; centred (with padding) where the image is smaller.
    /// With a `focusClass` the sample holds, centred on a pixel of that class.
    private func cropOrigin(
        labels: LabelTensor, outputHeight: Int, outputWidth: Int, focusClass: Int32?,
        random: inout SeededGenerator
    ) -> (Int, Int) {
        let (height, width) = (labels.shape[0], labels.shape[1])
        func clamp(_ value: Int, _ size: Int, _ output: Int) -> Int {
            size >= output ? min(max(value, 0), size - output) : -(output - size) / 2
        }
        if let focusClass {
            let pixels = labels.values.indices.filter { labels.values[$0] == focusClass }
            if !pixels.isEmpty {
                let pixel = pixels[random.index(below: pixels.count)]
                return (
                    clamp(pixel / width - outputHeight / 2, height, outputHeight),
                    clamp(pixel % width - outputWidth / 2, width, outputWidth)
                )
            }
        }
        if configuration.classBalancedCropProbability > 0, random.bernoulli(configuration.classBalancedCropProbability)
        {
            let foreground = Set(labels.values.filter { $0 > 0 && $0 != configuration.labelFill }).sorted()
            if !foreground.isEmpty {
                let chosen = foreground[random.index(below: foreground.count)]
                let pixels = labels.values.indices.filter { labels.values[$0] == chosen }
                let pixel = pixels[random.index(below: pixels.count)]
                return (
                    clamp(pixel / width - outputHeight / 2, height, outputHeight),
                    clamp(pixel % width - outputWidth / 2, width, outputWidth)
                )
            }
        }
        let top =
            height > outputHeight ? random.index(below: height - outputHeight + 1) : clamp(0, height, outputHeight)
        let left = width > outputWidth ? random.index(below: width - outputWidth + 1) : clamp(0, width, outputWidth)
        return (top, left)
    }

    /// Elastic displacements (dy, dx) per output pixel, interleaved, or nil when disabled.
    private func elasticField(outputHeight: Int, outputWidth: Int, random: inout SeededGenerator) -> [Double]? {
        let magnitude = configuration.elasticMagnitude
        let points = configuration.elasticControlPoints
        guard magnitude > 0 else { return nil }
        let grid = (0..<(2 * points * points)).map { _ in random.uniform(-magnitude...magnitude) }
        var field = [Double](repeating: 0, count: 2 * outputHeight * outputWidth)
        for i in 0..<outputHeight {
            let gy = Double(i) / Double(max(outputHeight - 1, 1)) * Double(points - 1)
            let y0 = min(Int(gy), points - 2)
            let fy = gy - Double(y0)
            for j in 0..<outputWidth {
                let gx = Double(j) / Double(max(outputWidth - 1, 1)) * Double(points - 1)
                let x0 = min(Int(gx), points - 2)
                let fx = gx - Double(x0)
                for axis in 0..<2 {
                    func at(_ y: Int, _ x: Int) -> Double { grid[2 * (y * points + x) + axis] }
                    field[2 * (i * outputWidth + j) + axis] =
                        (at(y0, x0) * (1 - fx) + at(y0, x0 + 1) * fx) * (1 - fy)
                        + (at(y0 + 1, x0) * (1 - fx) + at(y0 + 1, x0 + 1) * fx) * fy
                }
            }
        }
        return field
    }

    /// Contrast around the mean, brightness, gamma on the min–max range, then Gaussian noise.
    private func adjustIntensity(_ values: inout [Float], random: inout SeededGenerator) {
        let c = configuration
        guard !values.isEmpty else { return }
        if c.contrast > 0 || c.brightness > 0 {
            let factor = Float(c.contrast > 0 ? random.uniform((1 - c.contrast)...(1 + c.contrast)) : 1)
            let shift = Float(c.brightness > 0 ? random.uniform(-c.brightness...c.brightness) : 0)
            let mean = Float(values.reduce(0.0) { $0 + Double($1) } / Double(values.count))
            for i in values.indices { values[i] = (values[i] - mean) * factor + mean + shift }
        }
        if c.gammaProbability > 0, random.bernoulli(c.gammaProbability) {
            let gamma =
                c.maximumGamma > c.minimumGamma ? random.uniform(c.minimumGamma...c.maximumGamma) : c.minimumGamma
            if let low = values.min(), let high = values.max(), high > low {
                let range = high - low
                for i in values.indices {
                    values[i] = low + range * Float(pow(Double((values[i] - low) / range), gamma))
                }
            }
        }
        if c.noiseStandardDeviation > 0 {
            for i in values.indices { values[i] += Float(c.noiseStandardDeviation * random.normal()) }
        }
    }
}
