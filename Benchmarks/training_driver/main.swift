// Times SliceLab's training numerics for Benchmarks/bench_training.py: Dice+CE loss with its gradient, one
// AdamW and one SGD step over a parameter list, and augmenting a batch. Built by this folder's Package.swift
// against the `DeepLabTraining` product.
// Usage: training_driver SPEC.json → prints JSON of median milliseconds.
import DeepLab
import DeepLabTraining
import Foundation
import SliceLabSupport

struct Spec: Decodable {
    let batch: Int, classes: Int, size: Int, repeats: Int
    let parameterShapes: [[Int]]
    let augmentBatch: Int, augmentSource: Int, augmentCrop: Int
}

func median(_ repeats: Int, _ body: () throws -> Void) rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<repeats {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
    }
    return times.sorted()[times.count / 2]
}

let spec = try JSONDecoder().decode(Spec.self, from: Data(contentsOf: URL(fileURLWithPath: CommandLine.arguments[1])))
var random = SeededGenerator(seed: 1)
let logitCount = spec.batch * spec.classes * spec.size * spec.size
let logits = FloatTensor(shape: [spec.batch, spec.classes, spec.size, spec.size],
                         values: (0..<logitCount).map { _ in Float(random.normal()) })
let labels = LabelTensor(shape: [spec.batch, spec.size, spec.size],
                         values: (0..<(spec.batch * spec.size * spec.size)).map { _ in Int32(random.index(below: spec.classes)) })
let loss = DiceCELoss()
var sink = 0.0
let lossMilliseconds = try median(spec.repeats) { sink += try loss.evaluate(logits: logits, labels: labels).loss }

func parameters() -> [Parameter] {
    spec.parameterShapes.enumerated().map { index, shape in
        let count = shape.reduce(1, *)
        let parameter = Parameter(name: "p\(index)", shape: shape, value: [Float](repeating: 0.01, count: count))
        parameter.gradient = [Float](repeating: 0.001, count: count)
        return parameter
    }
}
let adamW = AdamW(parameters: parameters())
adamW.step(learningRate: 1e-3)  // allocate the moments first, as torch does on its first step
let adamWMilliseconds = median(spec.repeats) { adamW.step(learningRate: 1e-3) }
let sgd = SGD(parameters: parameters(), configuration: SGD.Configuration(momentum: 0.9, weightDecay: 1e-4))
sgd.step(learningRate: 1e-2)
let sgdMilliseconds = median(spec.repeats) { sgd.step(learningRate: 1e-2) }

let source = FloatTensor(shape: [1, spec.augmentSource, spec.augmentSource],
                         values: (0..<(spec.augmentSource * spec.augmentSource)).map { _ in Float(random.uniform()) })
let sourceLabels = LabelTensor(shape: [spec.augmentSource, spec.augmentSource],
                               values: (0..<(spec.augmentSource * spec.augmentSource)).map { Int32($0 % 3) })
let augmenter = try Augmenter(AugmentationConfiguration(cropSize: spec.augmentCrop, rotationDegrees: 15,
                                                        minimumScale: 0.85, maximumScale: 1.15, brightness: 0.1,
                                                        contrast: 0.1, gammaProbability: 0, noiseStandardDeviation: 0.02))
let augmentMilliseconds = try median(spec.repeats) {
    for _ in 0..<spec.augmentBatch {
        sink += Double(try augmenter.augment(image: source, labels: sourceLabels, random: &random).image.values[0])
    }
}
let result: [String: Double] = ["dicece_ms": lossMilliseconds, "adamw_ms": adamWMilliseconds,
                                "sgd_ms": sgdMilliseconds, "augment_ms": augmentMilliseconds, "sink": sink.isFinite ? 0 : 1]
print(String(decoding: try JSONSerialization.data(withJSONObject: result, options: .sortedKeys), as: UTF8.self))
