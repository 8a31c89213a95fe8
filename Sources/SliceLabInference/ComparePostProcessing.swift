import DeepLab
import Foundation
import SliceLabIO
import SliceLabSupport

/// A `compare --post` choice: registered post-processing steps in turn (`largest-component,fill-holes`), or
/// `auto` (nnU-Net's per-class choice of the component rules on the validation split).
public enum ComparePost: Equatable, Sendable, CustomStringConvertible {
    case steps(PostProcessingPipeline)
    case auto

    /// `none`, registered steps' names joined by commas, or `auto`; nil for anything else.
    public init?(_ text: String) {
        if text == "auto" {
            self = .auto
        } else if let pipeline = try? PostProcessingPipeline(parsing: text) {
            self = .steps(pipeline)
        } else {
            return nil
        }
    }

    /// Whether this choice runs `step`.
    public func contains(_ step: PostProcessingStepName) -> Bool {
        if case .steps(let pipeline) = self { return pipeline.contains(step) }
        return false
    }

    /// The choices `--post` takes.
    public static var names: [String] { PostProcessingStepName.allCases.map(\.rawValue) + ["auto"] }

    public var description: String {
        switch self {
        case .steps(let pipeline): return "\(pipeline)"
        case .auto: return "auto"
        }
    }
}

/// The model's output on a set's cases, kept for post-processing: per case the argmax, the softmax
/// (class-major per frame) and the display image.
public struct DeepOutputs {
    public var labels: [[Int32]] = []
    var probabilities: [[Float]] = []
    var display: [(values: [Float], channels: Int)] = []

    public init() {}

    /// Segments every image as `compare` does without post-processing (`VolumeSegmenter.segment`: context slices,
    /// in-plane resampling to the training spacing), keeping what post-processing needs (the softmax and the
    /// display image) when `keepsProbabilities`.
    public static func segment(
        _ segmenter: VolumeSegmenter, images: [ScanImage], keepsProbabilities: Bool = true,
        each: (Int) -> Void = { _ in }
    ) throws -> DeepOutputs {
        var outputs = DeepOutputs()
        for (index, image) in images.enumerated() {
            let result = try segmenter.segment(image, probabilities: keepsProbabilities)
            outputs.labels.append(result.labels)
            if keepsProbabilities {
                var display: [Float] = []
                var channels = 1
                for frame in 0..<image.frames {
                    let shown = SegmentPostProcessing.display(image, frame: frame)
                    (display, channels) = (display + shown.values, shown.channels)
                }
                outputs.probabilities.append(result.probabilities ?? [])
                outputs.display.append((display, channels))
            }
            each(index)
        }
        return outputs
    }

    /// Case `index` after `post`.
    public func apply(_ post: SegmentPostProcessing, case index: Int, image: ScanImage, classCount: Int) throws
        -> [Int32]
    {
        try post.apply(
            labels: labels[index], probabilities: probabilities[index], classCount: classCount,
            display: display[index].values, channels: display[index].channels, frames: image.frames,
            rows: image.rows, columns: image.columns, spacing: image.spacing)
    }
}

/// `compare --post auto`: for each foreground class, the component rules (none, largest-component, fill-holes,
/// or both in that order) with the highest mean Dice of that class on the selection cases, as nnU-Net chooses
/// its post-processing on the cross-validation predictions (Isensee et al. 2021).
public struct AutoPostProcessing: Equatable {
    /// The candidate rule sequences, in order of preference on ties (doing less wins).
    static let candidates: [[PostProcessingStepName]] = [
        [], [.largestComponent], [.fillHoles],
        [.largestComponent, .fillHoles]
    ]

    /// Per foreground class, the chosen rules.
    var rules: [Int: [PostProcessingStepName]]
    /// Per foreground class, the selection cases' mean Dice without rules and with the chosen ones.
    var diceBefore: [Int: Double]
    var diceAfter: [Int: Double]
    /// The split the choice was made on.
    var split: String

    /// Chooses the rules on `outputs` (the selection cases) against `references`.
    public init(
        outputs: DeepOutputs, images: [ScanImage], references: [[Int32]], classCount: Int,
        split: String
    ) throws {
        (rules, diceBefore, diceAfter, self.split) = ([:], [:], [:], split)
        for label in 1..<classCount {
            var best: (rules: [PostProcessingStepName], dice: Double)?
            for candidate in Self.candidates {
                var total = 0.0
                for index in images.indices {
                    let result = try Self.apply(
                        candidate, to: outputs.labels[index], classes: [label],
                        image: images[index], outputs: outputs, index: index,
                        classCount: classCount)
                    total += Self.dice(result, references[index], label: Int32(label))
                }
                let mean = total / Double(max(images.count, 1))
                if candidate.isEmpty { diceBefore[label] = mean }
                if best == nil || mean > best!.dice + 1e-12 { best = (candidate, mean) }
            }
            rules[label] = best?.rules ?? []
            diceAfter[label] = best?.dice ?? .nan
        }
    }

    /// Applies the chosen rules to one case.
    public func apply(case index: Int, outputs: DeepOutputs, image: ScanImage, classCount: Int) throws -> [Int32] {
        var labels = outputs.labels[index]
        for candidate in Self.candidates where !candidate.isEmpty {
            let classes = Set(rules.filter { $0.value == candidate }.map(\.key))
            guard !classes.isEmpty else { continue }
            labels = try Self.apply(
                candidate, to: labels, classes: classes, image: image, outputs: outputs,
                index: index, classCount: classCount)
        }
        return labels
    }

    /// The choice as the run's `postprocessing` attribute: `{"method": "auto", "split": …, "classes": {"1":
    /// {"rules": […], "dice_before": …, "dice_after": …}, …}}`.
    public var json: String {
        var classes: [String: Any] = [:]
        for (label, chosen) in rules {
            classes[String(label)] = [
                "rules": chosen.map(\.rawValue), "dice_before": diceBefore[label] ?? .nan,
                "dice_after": diceAfter[label] ?? .nan
            ]
        }
        let object: [String: Any] = ["method": "auto", "split": split, "classes": classes]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }

    private static func apply(
        _ steps: [PostProcessingStepName], to labels: [Int32], classes: Set<Int>,
        image: ScanImage, outputs: DeepOutputs, index: Int, classCount: Int
    ) throws -> [Int32] {
        try SegmentPostProcessing(pipeline: PostProcessingPipeline(steps), ruleClasses: classes).apply(
            labels: labels, probabilities: outputs.probabilities[index],
            classCount: classCount, display: outputs.display[index].values,
            channels: outputs.display[index].channels, frames: image.frames,
            rows: image.rows, columns: image.columns, spacing: image.spacing)
    }

    /// Dice of one class; 1 when both are empty.
    static func dice(_ prediction: [Int32], _ reference: [Int32], label: Int32) -> Double {
        var (both, predicted, actual) = (0, 0, 0)
        for (p, r) in zip(prediction, reference) {
            if p == label { predicted += 1 }
            if r == label { actual += 1 }
            if p == label && r == label { both += 1 }
        }
        return predicted + actual == 0 ? 1 : 2 * Double(both) / Double(predicted + actual)
    }
}
