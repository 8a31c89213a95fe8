import DeepLab
import Foundation

/// A loss value and its gradient with respect to the logits, which `SegmentationNetwork.backward` takes.
public struct LossResult: Sendable {
    /// The scalar loss (accumulated in Float64).
    public let loss: Double
    /// dLoss/dLogits, shaped like the logits [N, K, H, W].
    public let gradient: FloatTensor
}

/// Sums values over the ranks of a data-parallel job, in place (the identity for one process).
public typealias SumAcrossRanks = (inout [Double]) throws -> Void

/// A segmentation loss on logits [N, K, H, W] and labels [N, H, W].
public protocol SegmentationLoss: Sendable {
    /// The loss and its gradient.
    ///
    /// - Throws: `TrainingError.shapeMismatch` when the labels do not match the logits' N, H, W;
    ///   `.labelOutOfRange` for a label that is neither a class nor the ignore label.
    func evaluate(logits: FloatTensor, labels: LabelTensor) throws -> LossResult

    /// The loss of a global batch split over ranks, on this rank's share: its normaliser (the count or weight
    /// of non-ignored pixels, Dice's sums and term count) is summed over the ranks with `sum`, so the loss is
    /// the global batch's and the ranks' gradients add up to one process's gradient of it.
    func evaluate(logits: FloatTensor, labels: LabelTensor, summing sum: SumAcrossRanks?) throws -> LossResult
}

extension SegmentationLoss {
    public func evaluate(logits: FloatTensor, labels: LabelTensor) throws -> LossResult {
        try evaluate(logits: logits, labels: labels, summing: nil)
    }
}

/// The sizes a loss works with: batch, classes and pixels per image.
struct LossGeometry {
    let batch: Int
    let classes: Int
    let pixels: Int

    init(_ logits: FloatTensor, _ labels: LabelTensor) throws {
        guard logits.shape.count == 4, logits.shape[1] >= 1 else {
            throw TrainingError.shapeMismatch(
                what: "logits [N, K, H, W]", expected: [-1, -1, -1, -1],
                actual: logits.shape)
        }
        let expected = [logits.shape[0], logits.shape[2], logits.shape[3]]
        guard labels.shape == expected else {
            throw TrainingError.shapeMismatch(
                what: "labels [N, H, W] for logits \(logits.shape)",
                expected: expected, actual: labels.shape)
        }
        (batch, classes, pixels) = (logits.shape[0], logits.shape[1], logits.shape[2] * logits.shape[3])
    }

    /// Every pixel's class (image-major), −1 where the label is the ignore label.
    ///
    /// - Throws: `TrainingError.labelOutOfRange` for a label that is neither a class nor the ignore label.
    func classes(_ labels: LabelTensor, ignoreLabel: Int32?) throws -> [Int32] {
        var result = labels.values
        let count = Int32(classes)
        for (index, value) in result.enumerated() {
            if let ignoreLabel, value == ignoreLabel {
                result[index] = -1
            } else if value < 0 || value >= count {
                throw TrainingError.labelOutOfRange(value: Int(value), classCount: classes)
            }
        }
        return result
    }
}

/// Per-pixel softmax over the class axis of logits [N, K, H, W], in Float64, same layout; images in parallel.
func softmaxProbabilities(_ logits: FloatTensor, _ geometry: LossGeometry) -> [Double] {
    let (classes, pixels) = (geometry.classes, geometry.pixels)
    var probabilities = [Double](repeating: 0, count: logits.values.count)
    logits.values.withUnsafeBufferPointer { z in
        probabilities.withUnsafeMutableBufferPointer { buffer in
            let out = buffer
            concurrentForEach(0..<geometry.batch) { n in
                let base = n * classes * pixels
                for p in 0..<pixels {
                    var largest = -Double.infinity
                    for k in 0..<classes { largest = max(largest, Double(z[base + k * pixels + p])) }
                    var sum = 0.0
                    for k in 0..<classes {
                        let e = exp(Double(z[base + k * pixels + p]) - largest)
                        out[base + k * pixels + p] = e
                        sum += e
                    }
                    let inverse = 1 / sum
                    for k in 0..<classes { out[base + k * pixels + p] *= inverse }
                }
            }
        }
    }
    return probabilities
}

/// Logits with their checked geometry and softmax, computed once for losses that share them (Dice + CE).
struct SoftmaxedLogits {
    let shape: [Int]
    let geometry: LossGeometry
    let probabilities: [Double]

    init(_ logits: FloatTensor, _ labels: LabelTensor) throws {
        shape = logits.shape
        geometry = try LossGeometry(logits, labels)
        probabilities = softmaxProbabilities(logits, geometry)
    }
}

/// Pixel-wise cross-entropy with optional class weights and an ignore label.
///
/// loss = Σᵢ w[yᵢ]·(−log softmax(zᵢ)[yᵢ]) / Σᵢ w[yᵢ] over the pixels i not ignored — exactly
/// `torch.nn.CrossEntropyLoss(weight, ignore_index, reduction='mean')`, except that a batch with every pixel
/// ignored gives 0 with a zero gradient instead of NaN.
public struct CrossEntropyLoss: SegmentationLoss, Equatable {
    /// One weight per class, or nil for all ones.
    public var classWeights: [Double]?
    /// The label that contributes nothing (PyTorch's default is -100), or nil.
    public var ignoreLabel: Int32?

    public init(classWeights: [Double]? = nil, ignoreLabel: Int32? = -100) {
        self.classWeights = classWeights
        self.ignoreLabel = ignoreLabel
    }

    public func evaluate(logits: FloatTensor, labels: LabelTensor, summing sum: SumAcrossRanks?) throws
        -> LossResult
    {
        try evaluate(SoftmaxedLogits(logits, labels), labels: labels, summing: sum)
    }

    func evaluate(_ input: SoftmaxedLogits, labels: LabelTensor, summing sum: SumAcrossRanks?) throws
        -> LossResult
    {
        try pixelwiseLoss(
            input, labels, classWeights: classWeights, ignoreLabel: ignoreLabel,
            what: "cross-entropy", normalizeByWeights: true, summing: sum
        ) { q, weight in
            // −w·log q, and dLoss/dz_k = −w·(δ_ky − p_k)
            (-weight * log(q), -weight)
        }
    }
}

/// Soft Dice loss on softmax probabilities against one-hot labels, per image and class, then averaged.
///
/// For each image n (or the whole batch with `batch`) and class c (without class 0 unless
/// `includeBackground`): f = 1 − (2·Σ p·t + smoothNumerator) / (Σ t + Σ p + smoothDenominator); the loss is the
/// mean of f. This is MONAI's `DiceLoss(softmax=True, to_onehot_y=True, include_background, smooth_nr,
/// smooth_dr, batch, weight, ignore_index, reduction='mean')` (MONAI 1.6): class weights multiply each class's f
/// before the mean, and ignored pixels are left out of every sum.
public struct DiceLoss: SegmentationLoss, Equatable {
    public var includeBackground: Bool
    /// One weight per class (all K; class 0's is unused without background), or nil for all ones.
    public var classWeights: [Double]?
    public var smoothNumerator: Double
    public var smoothDenominator: Double
    /// Sum over the batch before dividing (one Dice per class) instead of one Dice per image and class.
    public var batch: Bool
    public var ignoreLabel: Int32?

    public init(
        includeBackground: Bool = true, smoothNumerator: Double = 1e-5, smoothDenominator: Double = 1e-5,
        batch: Bool = false, classWeights: [Double]? = nil, ignoreLabel: Int32? = -100
    ) {
        self.includeBackground = includeBackground
        self.classWeights = classWeights
        self.smoothNumerator = smoothNumerator
        self.smoothDenominator = smoothDenominator
        self.batch = batch
        self.ignoreLabel = ignoreLabel
    }

    public func evaluate(logits: FloatTensor, labels: LabelTensor, summing sum: SumAcrossRanks?) throws
        -> LossResult
    {
        try evaluate(SoftmaxedLogits(logits, labels), labels: labels, summing: sum)
    }

    func evaluate(_ input: SoftmaxedLogits, labels: LabelTensor, summing sum: SumAcrossRanks?) throws
        -> LossResult
    {
        let geometry = input.geometry
        let (classes, pixels) = (geometry.classes, geometry.pixels)
        let firstClass = includeBackground ? 0 : 1
        guard firstClass < classes else {
            throw TrainingError.invalidConfiguration("Dice without background needs at least 2 classes")
        }
        if let classWeights, classWeights.count != classes {
            throw TrainingError.shapeMismatch(
                what: "Dice class weights", expected: [classes],
                actual: [classWeights.count])
        }
        let label = try geometry.classes(labels, ignoreLabel: ignoreLabel)
        // Sums per image and class (intersection, ground truth, prediction), images in parallel; with `batch`
        // they are then added over the images, in image order.
        var sums = [Double](repeating: 0, count: geometry.batch * 3 * classes)
        input.probabilities.withUnsafeBufferPointer { probabilities in
            label.withUnsafeBufferPointer { label in
                sums.withUnsafeMutableBufferPointer { sums in
                    let sums = sums
                    concurrentForEach(0..<geometry.batch) { n in
                        let (intersection, truth, predicted) = (
                            n * 3 * classes, (n * 3 + 1) * classes,
                            (n * 3 + 2) * classes
                        )
                        for p in 0..<pixels {
                            let y = Int(label[n * pixels + p])
                            guard y >= 0 else { continue }
                            for k in 0..<classes {
                                sums[predicted + k] += probabilities[(n * classes + k) * pixels + p]
                            }
                            sums[intersection + y] += probabilities[(n * classes + y) * pixels + p]
                            sums[truth + y] += 1
                        }
                    }
                }
            }
        }
        let groups = batch ? 1 : geometry.batch
        var intersection = [Double](repeating: 0, count: groups * classes)
        var truth = intersection
        var predicted = intersection
        for n in 0..<geometry.batch {
            let g = batch ? 0 : n
            for k in 0..<classes {
                intersection[g * classes + k] += sums[n * 3 * classes + k]
                truth[g * classes + k] += sums[(n * 3 + 1) * classes + k]
                predicted[g * classes + k] += sums[(n * 3 + 2) * classes + k]
            }
        }
        // Over the ranks: with `batch` the one group's sums; per image, the number of images (terms).
        var globalGroups = Double(groups)
        if let sum {
            var shared = batch ? intersection + truth + predicted + [globalGroups] : [globalGroups]
            try sum(&shared)
            if batch {
                intersection = Array(shared[0..<classes])
                truth = Array(shared[classes..<(2 * classes)])
                predicted = Array(shared[(2 * classes)..<(3 * classes)])
                globalGroups = 1
            } else {
                globalGroups = shared[0]
            }
        }
        let terms = globalGroups * Double(classes - firstClass)
        var loss = 0.0
        // dLoss/dp = −(2·t·D − N)/D² / terms, with N the smoothed numerator and D the smoothed denominator.
        var numerator = intersection
        var denominator = intersection
        for index in 0..<(groups * classes) where index % classes >= firstClass {
            numerator[index] = 2 * intersection[index] + smoothNumerator
            denominator[index] = truth[index] + predicted[index] + smoothDenominator
            loss += (classWeights?[index % classes] ?? 1) * (1 - numerator[index] / denominator[index])
        }
        // dLoss/dp_k for a pixel of each group, with its label (or not): the gradient's two possible values.
        func byProbability(_ g: Int, _ k: Int, labelled: Bool) -> Double {
            let index = g * classes + k
            return k < firstClass
                ? 0
                : -(classWeights?[k] ?? 1)
                    * (2 * (labelled ? 1 : 0) * denominator[index] - numerator[index])
                    / (denominator[index] * denominator[index]) / terms
        }
        let unlabelled = (0..<groups).flatMap { g in (0..<classes).map { byProbability(g, $0, labelled: false) } }
        let labelled = (0..<groups).flatMap { g in (0..<classes).map { byProbability(g, $0, labelled: true) } }
        var gradient = [Float](repeating: 0, count: input.probabilities.count)
        input.probabilities.withUnsafeBufferPointer { probabilities in
            label.withUnsafeBufferPointer { label in
                gradient.withUnsafeMutableBufferPointer { gradient in
                    let gradient = gradient
                    concurrentForEach(0..<geometry.batch) { n in
                        let g = batch ? 0 : n
                        for p in 0..<pixels {
                            let y = Int(label[n * pixels + p])
                            guard y >= 0 else { continue }
                            var dot = 0.0
                            for k in 0..<classes {
                                let d = k == y ? labelled[g * classes + k] : unlabelled[g * classes + k]
                                dot += d * probabilities[(n * classes + k) * pixels + p]
                            }
                            for k in 0..<classes {
                                let index = (n * classes + k) * pixels + p
                                let d = k == y ? labelled[g * classes + k] : unlabelled[g * classes + k]
                                gradient[index] = Float(probabilities[index] * (d - dot))
                            }
                        }
                    }
                }
            }
        }
        if let sum, !batch {
            var total = [loss]
            try sum(&total)
            loss = total[0]
        }
        return LossResult(loss: loss / terms, gradient: FloatTensor(shape: input.shape, values: gradient))
    }
}

/// Dice plus cross-entropy, λ_dice·Dice + λ_ce·CE: MONAI's `DiceCELoss(softmax=True, to_onehot_y=True, …)`,
/// the usual default for medical segmentation. `init(classWeights:…)` gives both terms the weights, as MONAI does.
public struct DiceCELoss: SegmentationLoss, Equatable {
    public var dice: DiceLoss
    public var crossEntropy: CrossEntropyLoss
    public var diceWeight: Double
    public var crossEntropyWeight: Double

    public init(
        dice: DiceLoss, crossEntropy: CrossEntropyLoss,
        diceWeight: Double = 1, crossEntropyWeight: Double = 1
    ) {
        self.dice = dice
        self.crossEntropy = crossEntropy
        self.diceWeight = diceWeight
        self.crossEntropyWeight = crossEntropyWeight
    }

    /// MONAI's parameters: `weight` for both terms, the smoothing and background choice for Dice.
    public init(
        includeBackground: Bool = true, classWeights: [Double]? = nil, smoothNumerator: Double = 1e-5,
        smoothDenominator: Double = 1e-5, diceWeight: Double = 1, crossEntropyWeight: Double = 1,
        ignoreLabel: Int32? = -100
    ) {
        self.init(
            dice: DiceLoss(
                includeBackground: includeBackground, smoothNumerator: smoothNumerator,
                smoothDenominator: smoothDenominator, classWeights: classWeights,
                ignoreLabel: ignoreLabel),
            crossEntropy: CrossEntropyLoss(classWeights: classWeights, ignoreLabel: ignoreLabel),
            diceWeight: diceWeight, crossEntropyWeight: crossEntropyWeight)
    }

    public func evaluate(logits: FloatTensor, labels: LabelTensor, summing sum: SumAcrossRanks?) throws
        -> LossResult
    {
        let input = try SoftmaxedLogits(logits, labels)
        let d = try dice.evaluate(input, labels: labels, summing: sum)
        let c = try crossEntropy.evaluate(input, labels: labels, summing: sum)
        let (a, b) = (Float(diceWeight), Float(crossEntropyWeight))
        let gradient = zip(d.gradient.values, c.gradient.values).map { a * $0 + b * $1 }
        return LossResult(
            loss: diceWeight * d.loss + crossEntropyWeight * c.loss,
            gradient: FloatTensor(shape: logits.shape, values: gradient))
    }
}

/// Multi-class focal loss (Lin et al. 2017, arXiv:1708.02002): the mean over non-ignored pixels of
/// −α[y]·(1 − p_y)^γ·log p_y. With γ = 0 and no α it equals the unweighted cross-entropy.
public struct FocalLoss: SegmentationLoss, Equatable {
    public var gamma: Double
    /// Per-class α, or nil for all ones.
    public var classWeights: [Double]?
    public var ignoreLabel: Int32?

    public init(gamma: Double = 2, classWeights: [Double]? = nil, ignoreLabel: Int32? = -100) {
        self.gamma = gamma
        self.classWeights = classWeights
        self.ignoreLabel = ignoreLabel
    }

    public func evaluate(logits: FloatTensor, labels: LabelTensor, summing sum: SumAcrossRanks?) throws
        -> LossResult
    {
        try pixelwiseLoss(
            SoftmaxedLogits(logits, labels), labels, classWeights: classWeights,
            ignoreLabel: ignoreLabel, what: "focal", normalizeByWeights: false,
            summing: sum
        ) { q, weight in
            // −w·(1−q)^γ·log q, and dLoss/dz_k = w·[γ(1−q)^(γ−1)·q·log q − (1−q)^γ]·(δ_ky − p_k)
            let logQ = log(q)
            let rest = 1 - q
            let modulation = gamma == 0 || rest == 0 ? 0 : gamma * pow(rest, gamma - 1) * q * logQ
            return (-weight * pow(rest, gamma) * logQ, weight * (modulation - pow(rest, gamma)))
        }
    }
}

/// A loss that is a sum of per-pixel terms of p_y, the softmax probability of the pixel's label.
///
/// - Parameters:
///   - normalizeByWeights: divide by the sum of the pixels' class weights (PyTorch's weighted mean) rather
///     than by the number of pixels not ignored.
///   - sum: sums the loss terms and the normaliser over the ranks of a data-parallel job.
///   - term: for p_y and the class weight, the pixel's loss and the factor f with dLoss/dz_k = f·(δ_ky − p_k).
func pixelwiseLoss(
    _ input: SoftmaxedLogits, _ labels: LabelTensor, classWeights: [Double]?, ignoreLabel: Int32?,
    what: String, normalizeByWeights: Bool, summing sum: SumAcrossRanks? = nil,
    term: (_ probability: Double, _ weight: Double) -> (loss: Double, factor: Double)
) throws
    -> LossResult
{
    let geometry = input.geometry
    if let classWeights, classWeights.count != geometry.classes {
        throw TrainingError.shapeMismatch(
            what: "\(what) class weights", expected: [geometry.classes],
            actual: [classWeights.count])
    }
    let (classes, pixels) = (geometry.classes, geometry.pixels)
    let label = try geometry.classes(labels, ignoreLabel: ignoreLabel)
    // Per image, in parallel: the loss terms' and weights' sums and the unscaled gradient; then the sums are
    // added in image order and the gradient scaled.
    var partial = [Double](repeating: 0, count: 2 * geometry.batch)
    var gradient = [Float](repeating: 0, count: input.probabilities.count)
    var factors = [Double](repeating: 0, count: geometry.batch * pixels)
    input.probabilities.withUnsafeBufferPointer { probabilities in
        label.withUnsafeBufferPointer { label in
            partial.withUnsafeMutableBufferPointer { partial in
                factors.withUnsafeMutableBufferPointer { factors in
                    let (partial, factors) = (partial, factors)
                    concurrentForEach(0..<geometry.batch) { n in
                        let base = n * classes * pixels
                        var total = 0.0
                        var normalizer = 0.0
                        for p in 0..<pixels {
                            let y = Int(label[n * pixels + p])
                            guard y >= 0 else { continue }
                            let weight = classWeights?[y] ?? 1
                            let (loss, factor) = term(
                                max(
                                    probabilities[base + y * pixels + p],
                                    Double.leastNormalMagnitude), weight)
                            total += loss
                            normalizer += normalizeByWeights ? weight : 1
                            factors[n * pixels + p] = factor
                        }
                        (partial[2 * n], partial[2 * n + 1]) = (total, normalizer)
                    }
                }
            }
        }
    }
    var total = stride(from: 0, to: partial.count, by: 2).reduce(0.0) { $0 + partial[$1] }
    var normalizer = stride(from: 1, to: partial.count, by: 2).reduce(0.0) { $0 + partial[$1] }
    if let sum {
        var shared = [total, normalizer]
        try sum(&shared)
        (total, normalizer) = (shared[0], shared[1])
    }
    let scale = normalizer > 0 ? 1 / normalizer : 0
    input.probabilities.withUnsafeBufferPointer { probabilities in
        label.withUnsafeBufferPointer { label in
            factors.withUnsafeBufferPointer { factors in
                gradient.withUnsafeMutableBufferPointer { gradient in
                    let gradient = gradient
                    concurrentForEach(0..<geometry.batch) { n in
                        let base = n * classes * pixels
                        for p in 0..<pixels {
                            let y = Int(label[n * pixels + p])
                            guard y >= 0 else { continue }
                            let factor = factors[n * pixels + p]
                            for k in 0..<classes {
                                let index = base + k * pixels + p
                                gradient[index] = Float(factor * ((k == y ? 1 : 0) - probabilities[index]) * scale)
                            }
                        }
                    }
                }
            }
        }
    }
    return LossResult(loss: total * scale, gradient: FloatTensor(shape: input.shape, values: gradient))
}
