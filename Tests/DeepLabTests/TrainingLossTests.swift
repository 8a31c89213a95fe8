import Foundation
import Testing

@testable import DeepLab
@testable import DeepLabTraining

/// Losses against PyTorch's CrossEntropyLoss and MONAI's DiceLoss/DiceCELoss (goldens from
/// Datasets/goldens/training_goldens.py), and every loss's gradient against central finite differences.
struct TrainingLossTests {
    static func loss(for golden: [String: Any]) throws -> SegmentationLoss {
        let options = golden["options"] as? [String: Any] ?? [:]
        let weights = options["class_weights"].flatMap { try? TrainingGoldens.doubles($0) }
        let ignore = (options["ignore_label"] as? NSNumber).map { Int32($0.intValue) }
        let background = (options["include_background"] as? Bool) ?? true
        switch golden["kind"] as? String {
        case "ce": return CrossEntropyLoss(classWeights: weights, ignoreLabel: ignore)
        case "dice":
            return DiceLoss(
                includeBackground: background,
                smoothNumerator: (options["smooth_nr"] as? NSNumber)?.doubleValue ?? 1e-5,
                smoothDenominator: (options["smooth_dr"] as? NSNumber)?.doubleValue ?? 1e-5,
                batch: (options["batch"] as? Bool) ?? false, classWeights: weights, ignoreLabel: ignore)
        case "dicece":
            return DiceCELoss(
                includeBackground: background, classWeights: weights,
                diceWeight: (options["lambda_dice"] as? NSNumber)?.doubleValue ?? 1,
                crossEntropyWeight: (options["lambda_ce"] as? NSNumber)?.doubleValue ?? 1)
        case "focal":
            return FocalLoss(
                gamma: (options["gamma"] as? NSNumber)?.doubleValue ?? 2, classWeights: weights,
                ignoreLabel: ignore)
        default: throw TrainingGoldens.Failure(description: "unknown loss kind in \(golden)")
        }
    }

    static func inputs(_ golden: [String: Any]) throws -> (FloatTensor, LabelTensor) {
        let shape = try TrainingGoldens.ints(golden["logits_shape"])
        let logits = FloatTensor(shape: shape, values: try TrainingGoldens.floats(golden["logits"]))
        let labels = LabelTensor(
            shape: [shape[0], shape[2], shape[3]],
            values: try TrainingGoldens.ints(golden["labels"]).map { Int32($0) })
        return (logits, labels)
    }

    /// Tolerance: 1e-5 relative to the peer (float32 in torch, float64 accumulation here) plus 1e-7 absolute
    /// for gradient entries near zero.
    @Test(arguments: TrainingGoldens.lossNames)
    func lossAndGradientMatchTorchAndMONAI(name: String) throws {
        let golden = try TrainingGoldens.loss(named: name)
        let (logits, labels) = try Self.inputs(golden)
        let result = try Self.loss(for: golden).evaluate(logits: logits, labels: labels)
        let expectedLoss = try #require(golden["loss"] as? NSNumber).doubleValue
        #expect(abs(result.loss - expectedLoss) <= 1e-5 * abs(expectedLoss) + 1e-7, "\(name): loss")
        let expectedGradient = try TrainingGoldens.doubles(golden["gradient"])
        let gradient = result.gradient.values.map(Double.init)
        #expect(
            isClose(gradient, expectedGradient, relative: 1e-5, absolute: 1e-7),
            "\(name): gradient off by \(relativeError(gradient, expectedGradient)) of its largest entry")
    }

    /// Central differences in Float64 through Float32 logits: h = 1e-2 on logits of order 1 keeps the truncation
    /// error near 1e-5 and the rounding error (1e-7·loss/h) below it; agreement within 1e-3 of the largest entry.
    @Test(arguments: TrainingGoldens.lossNames)
    func gradientMatchesFiniteDifferences(name: String) throws {
        let golden = try TrainingGoldens.loss(named: name)
        let (logits, labels) = try Self.inputs(golden)
        let loss = try Self.loss(for: golden)
        let analytic = try loss.evaluate(logits: logits, labels: labels).gradient.values.map(Double.init)
        let h: Float = 1e-2
        var numeric = [Double](repeating: 0, count: analytic.count)
        for index in stride(from: 0, to: logits.values.count, by: 3) {
            var plus = logits
            var minus = logits
            plus.values[index] += h
            minus.values[index] -= h
            let up = try loss.evaluate(logits: plus, labels: labels).loss
            let down = try loss.evaluate(logits: minus, labels: labels).loss
            numeric[index] = (up - down) / Double(2 * h)
        }
        let sampled = stride(from: 0, to: analytic.count, by: 3).map { ($0, analytic[$0], numeric[$0]) }
        let scale = analytic.map(abs).max() ?? 1
        let worst = sampled.map { abs($0.1 - $0.2) }.max() ?? 0
        #expect(worst <= 1e-3 * scale, "\(name): worst |analytic − numeric| = \(worst)")
    }

    @Test func goldensCoverEveryLossKind() {
        let kinds = Set(
            TrainingGoldens.lossNames.compactMap { try? TrainingGoldens.loss(named: $0)["kind"] as? String })
        #expect(kinds == ["ce", "dice", "dicece", "focal"])
        #expect(TrainingGoldens.lossNames.count == 10)
        #expect(TrainingGoldens.optimizerCaseIndices.count == 6)
    }

    @Test func ignoredPixelsChangeNeitherLossNorGradient() throws {
        let logits = FloatTensor(shape: [1, 3, 2, 2], values: (0..<12).map { Float($0 % 5) * 0.3 - 0.5 })
        let base = LabelTensor(shape: [1, 2, 2], values: [Int32(0), 1, 2, -100])
        var perturbed = logits
        perturbed.values[3] += 5  // class 0 at the ignored pixel
        perturbed.values[7] -= 2  // class 1 at the ignored pixel
        let losses: [SegmentationLoss] = [CrossEntropyLoss(), DiceLoss(), DiceCELoss(), FocalLoss()]
        for loss in losses {
            let a = try loss.evaluate(logits: logits, labels: base)
            let b = try loss.evaluate(logits: perturbed, labels: base)
            #expect(abs(a.loss - b.loss) < 1e-12, "\(loss)")
            #expect(b.gradient.values[3] == 0 && b.gradient.values[7] == 0 && b.gradient.values[11] == 0)
        }
    }

    /// An ignore label may be a class index too (e.g. "ignore class 1"): its pixels are left out, exactly as
    /// pixels carrying PyTorch's default ignore label are.
    @Test func anIgnoreLabelThatIsAClassIsIgnored() throws {
        let logits = FloatTensor(shape: [2, 3, 2, 2], values: (0..<24).map { cos(Float($0)) * 2 })
        let labels = LabelTensor(shape: [2, 2, 2], values: [Int32(0), 1, 2, 1, 2, 2, 1, 0])
        let relabelled = LabelTensor(shape: [2, 2, 2], values: labels.values.map { $0 == 1 ? -100 : $0 })
        let pairs: [(SegmentationLoss, SegmentationLoss)] = [
            (CrossEntropyLoss(ignoreLabel: 1), CrossEntropyLoss()), (DiceLoss(ignoreLabel: 1), DiceLoss()),
            (DiceCELoss(ignoreLabel: 1), DiceCELoss()), (FocalLoss(ignoreLabel: 1), FocalLoss())
        ]
        for (byClass, byDefault) in pairs {
            let a = try byClass.evaluate(logits: logits, labels: labels)
            let b = try byDefault.evaluate(logits: logits, labels: relabelled)
            #expect(a.loss == b.loss && a.gradient == b.gradient, "\(byClass)")
        }
    }

    @Test func focalWithoutFocusingEqualsCrossEntropy() throws {
        let logits = FloatTensor(shape: [2, 3, 2, 3], values: (0..<36).map { sin(Float($0)) * 2 })
        let labels = LabelTensor(shape: [2, 2, 3], values: (0..<12).map { Int32($0 % 3) })
        let focal = try FocalLoss(gamma: 0).evaluate(logits: logits, labels: labels)
        let crossEntropy = try CrossEntropyLoss().evaluate(logits: logits, labels: labels)
        #expect(abs(focal.loss - crossEntropy.loss) < 1e-12)
        #expect(
            isClose(
                focal.gradient.values.map(Double.init), crossEntropy.gradient.values.map(Double.init),
                relative: 1e-6, absolute: 1e-9))
    }

    @Test func labelOutsideTheClassesIsATypedError() {
        let logits = FloatTensor(zeros: [1, 3, 1, 2])
        let labels = LabelTensor(shape: [1, 1, 2], values: [Int32(0), 3])
        #expect(throws: TrainingError.labelOutOfRange(value: 3, classCount: 3)) {
            try CrossEntropyLoss().evaluate(logits: logits, labels: labels)
        }
        #expect(throws: TrainingError.self) {
            try DiceLoss().evaluate(logits: logits, labels: LabelTensor(shape: [1, 2, 1], values: [Int32(0), 1]))
        }
    }
}
