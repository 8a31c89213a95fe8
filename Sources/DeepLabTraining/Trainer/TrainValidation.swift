import DeepLab
import Metrics

/// Validation of a network on preprocessed cases: mean loss, and per-class Dice and IoU (the Metrics module's
/// `OverlapMetrics`, empty rule `.one`) of the confusion matrix summed over all validation pixels not ignored.
public struct TrainValidation {
    /// A validation case: image [C, H, W] (preprocessed) and labels [H, W].
    public struct Case: Sendable {
        public let name: String
        public let image: FloatTensor
        public let labels: LabelTensor

        public init(name: String, image: FloatTensor, labels: LabelTensor) {
            self.name = name
            self.image = image
            self.labels = labels
        }
    }

    public struct Result: Equatable, Sendable {
        public let loss: Double
        /// Dice per class, 2·TP / (2·TP + FP + FN); 1 for a class absent from both reference and prediction.
        public let dice: [Double]
        /// IoU per class, TP / (TP + FP + FN); 1 for a class absent from both.
        public let iou: [Double]
        /// Mean Dice over the foreground classes 1..<K, the score that selects the best checkpoint.
        public var meanForegroundDice: Double { dice.dropFirst().reduce(0, +) / Double(max(dice.count - 1, 1)) }
    }

    public let cases: [Case]
    public let classCount: Int
    public let loss: SegmentationLoss

    public init(cases: [Case], classCount: Int, loss: SegmentationLoss) {
        self.cases = cases
        self.classCount = classCount
        self.loss = loss
    }

    /// Runs every case through `network` in eval mode, one at a time.
    ///
    /// - Throws: what the network or the loss throws.
    public func evaluate(_ network: SegmentationNetwork) throws -> Result {
        var counts = [Int64](repeating: 0, count: classCount * classCount)
        var totalLoss = 0.0
        for sample in cases {
            let input = FloatTensor(shape: [1] + sample.image.shape, values: sample.image.values)
            let logits = try network.forward(input, training: false)
            let expected = [1, classCount] + Array(sample.image.shape.suffix(2))
            guard logits.shape == expected else {
                throw TrainingError.shapeMismatch(
                    what: "validation logits of case \(sample.name)", expected: expected,
                    actual: logits.shape)
            }
            let labels = LabelTensor(shape: [1] + sample.labels.shape, values: sample.labels.values)
            totalLoss += try loss.evaluate(logits: logits, labels: labels).loss
            let pixels = sample.labels.values.count
            for p in 0..<pixels {
                let truth = Int(sample.labels.values[p])
                guard truth >= 0, truth < classCount else { continue }  // ignored pixels
                var predicted = 0
                for k in 1..<classCount where logits.values[k * pixels + p] > logits.values[predicted * pixels + p] {
                    predicted = k
                }
                counts[truth * classCount + predicted] += 1
            }
        }
        let confusion = try ConfusionMatrix(classCount: classCount, counts: counts)
        let overlaps = (0..<classCount).map {
            OverlapMetrics(confusion, classIndex: $0, voxelVolumeMM3: 1, empty: .one)
        }
        let dice = overlaps.map(\.dice)
        let iou = overlaps.map(\.iou)
        return Result(loss: cases.isEmpty ? 0 : totalLoss / Double(cases.count), dice: dice, iou: iou)
    }
}
