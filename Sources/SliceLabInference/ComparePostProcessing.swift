import Classical
import DeepLab
import Foundation
import Metrics
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
    ///
    /// - Parameter inspect: given, sees each case's labels and softmax as it is made (whether kept or not).
    public static func segment(
        _ segmenter: VolumeSegmenter, images: [ScanImage], keepsProbabilities: Bool = true,
        inspect: ((_ index: Int, _ labels: [Int32], _ probabilities: [Float]) throws -> Void)? = nil,
        each: (Int) -> Void = { _ in }
    ) throws -> DeepOutputs {
        var outputs = DeepOutputs()
        for (index, image) in images.enumerated() {
            let result = try segmenter.segment(image, probabilities: keepsProbabilities || inspect != nil)
            try inspect?(index, result.labels, result.probabilities ?? [])
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

    /// Adds `other`'s cases after these.
    public mutating func append(_ other: DeepOutputs) {
        labels += other.labels
        probabilities += other.probabilities
        display += other.display
    }

    /// Case `index` after `post`.
    public func apply(_ post: SegmentPostProcessing, case index: Int, image: ScanImage, classCount: Int) throws
        -> [Int32]
    {
        try post.apply(self, labels: labels[index], case: index, image: image, classCount: classCount)
    }
}

/// `--post auto`, as nnU-Net chooses its post-processing on the cross-validation predictions (Isensee et al.
/// 2021): first a whole-map step (each of `wholeMapCandidates`, alone) against none on the mean foreground Dice,
/// then per foreground class the component rules (none, largest-component, fill-holes, or both in that order)
/// against none on that class's Dice. A candidate replaces none when its mean Dice over the selection cases is
/// higher and, with a `significance` level, when the paired Wilcoxon signed-rank test of the per-case differences
/// has p below it; of the candidates that pass, the best mean wins (doing less on ties).
///
/// `compare --post auto` chooses the component rules on the validation split by the mean alone; `train --fold
/// all --post auto` chooses on every fold's validation cases, with whole-map steps and p < 0.05, and stores the
/// choice beside the fold models (`PostProcessingChoice.fileName`) for `segment --regularize auto`.
public struct AutoPostProcessing: Equatable, Sendable {
    /// The candidate rule sequences of a class, in order of preference on ties (doing less wins).
    static let ruleCandidates: [[PostProcessingStepName]] = [
        [], [.largestComponent], [.fillHoles], [.largestComponent, .fillHoles]
    ]

    /// What a candidate did against none on the selection cases.
    struct Evidence: Codable, Equatable, Sendable {
        /// The chosen steps (empty: none).
        var steps: [String]
        var diceBefore: Double
        var diceAfter: Double
        /// The paired Wilcoxon p-value of the chosen candidate against none; nil when none was kept.
        var pValue: Double?

        enum CodingKeys: String, CodingKey {
            case steps = "rules"
            case diceBefore = "dice_before"
            case diceAfter = "dice_after"
            case pValue = "p_value"
        }
    }

    /// The record `json` writes and `init(json:)` reads.
    struct Record: Codable, Equatable, Sendable {
        var method = "auto"
        var split: String
        var significance: Double?
        var wholeMap: Evidence?
        var classes: [String: Evidence]
        var crf: String?

        enum CodingKeys: String, CodingKey {
            case method, split, significance
            case wholeMap = "whole_map"
            case classes, crf
        }
    }

    /// The choice, ready to apply (`SegmentPostProcessing.apply`).
    public private(set) var chosen: SegmentPostProcessing
    private var record: Record

    /// Chooses on `outputs` (the selection cases) against `references`.
    ///
    /// - Parameters:
    ///   - wholeMapCandidates: steps tried on the whole map before the class rules (empty: none tried).
    ///   - significance: the level the paired test must pass; nil chooses by the mean alone.
    ///   - crf: the CRF's parameters, when `crf` is a candidate.
    public init(
        outputs: DeepOutputs, images: [ScanImage], references: [[Int32]], classCount: Int, split: String,
        wholeMapCandidates: [PostProcessingStepName] = [], significance: Double? = nil,
        crf: SegmentPostProcessing.CRFParameters = SegmentPostProcessing.CRFParameters()
    ) throws {
        chosen = SegmentPostProcessing(crf: crf)
        record = Record(
            split: split, significance: significance, classes: [:],
            crf: wholeMapCandidates.contains(.crf) ? crf.spec : nil)
        let foreground = Array(1..<max(classCount, 1))
        func meanDice(_ labels: [[Int32]], classes: [Int]) -> [Double] {
            zip(labels, references).map { prediction, reference in
                classes.map { Self.dice(prediction, reference, label: Int32($0)) }.reduce(0, +)
                    / Double(max(classes.count, 1))
            }
        }
        /// The best candidate that passes against the first (none), with its evidence.
        func choose(
            _ candidates: [[PostProcessingStepName]], classes: [Int],
            _ run: ([PostProcessingStepName]) throws
                -> [[Int32]]
        ) throws -> (steps: [PostProcessingStepName], labels: [[Int32]], evidence: Evidence) {
            let baseline = try run([])
            let before = meanDice(baseline, classes: classes)
            let beforeMean = before.reduce(0, +) / Double(max(before.count, 1))
            var best = (
                steps: [PostProcessingStepName](), labels: baseline,
                evidence: Evidence(steps: [], diceBefore: beforeMean, diceAfter: beforeMean, pValue: nil)
            )
            for candidate in candidates where !candidate.isEmpty {
                let labels = try run(candidate)
                let after = meanDice(labels, classes: classes)
                let mean = after.reduce(0, +) / Double(max(after.count, 1))
                guard mean > best.evidence.diceAfter + 1e-12 else { continue }
                let p = WilcoxonSignedRank(differences: zip(after, before).map { $0 - $1 }).pValue
                if let significance, !(p < significance) { continue }
                best = (
                    candidate, labels,
                    Evidence(
                        steps: candidate.map(\.rawValue), diceBefore: beforeMean, diceAfter: mean, pValue: p)
                )
            }
            return best
        }
        var labels = outputs.labels
        if !wholeMapCandidates.isEmpty {
            let whole = try choose([[]] + wholeMapCandidates.map { [$0] }, classes: foreground) { steps in
                try images.indices.map { index in
                    try SegmentPostProcessing(pipeline: PostProcessingPipeline(steps), crf: crf).apply(
                        outputs, labels: outputs.labels[index], case: index, image: images[index],
                        classCount: classCount)
                }
            }
            (chosen.pipeline, labels, record.wholeMap) = (
                PostProcessingPipeline(whole.steps), whole.labels, whole.evidence
            )
        }
        for label in foreground {
            let rules = try choose(Self.ruleCandidates, classes: [label]) { steps in
                try images.indices.map { index in
                    try SegmentPostProcessing(pipeline: PostProcessingPipeline(steps), ruleClasses: [label]).apply(
                        outputs, labels: labels[index], case: index, image: images[index], classCount: classCount)
                }
            }
            if !rules.steps.isEmpty { chosen.classRules[label] = PostProcessingPipeline(rules.steps) }
            record.classes[String(label)] = rules.evidence
        }
    }

    /// A choice as `json` wrote it.
    ///
    /// - Throws: `InferenceError.invalidPostProcessingChoice` naming `file` and the cause.
    public init(json: Data, file: String) throws {
        do {
            record = try JSONDecoder().decode(Record.self, from: json)
            guard record.method == "auto" else {
                throw InferenceError.invalidPostProcessingChoice(
                    file: file, reason: "method is '\(record.method)', not 'auto'")
            }
            chosen = SegmentPostProcessing(
                pipeline: try PostProcessingPipeline(steps: record.wholeMap?.steps ?? []),
                crf: try record.crf.map(SegmentPostProcessing.CRFParameters.init(parsing:))
                    ?? SegmentPostProcessing.CRFParameters())
            for (key, evidence) in record.classes where !evidence.steps.isEmpty {
                guard let label = Int(key), label > 0 else {
                    throw InferenceError.invalidPostProcessingChoice(
                        file: file, reason: "class '\(key)' is not a foreground index")
                }
                chosen.classRules[label] = try PostProcessingPipeline(steps: evidence.steps)
            }
        } catch let error as InferenceError {
            throw error
        } catch {
            throw InferenceError.invalidPostProcessingChoice(file: file, reason: "\(error)")
        }
    }

    /// The file a cross-validation's choice is stored in, beside the fold models (OUT/postprocessing.json).
    public static let fileName = "postprocessing.json"

    /// The choice stored in `folder` (`fileName`), or nil when there is none.
    ///
    /// - Throws: `InferenceError.invalidPostProcessingChoice` for a file that does not hold one.
    public static func stored(in folder: String) throws -> AutoPostProcessing? {
        let path = URL(fileURLWithPath: folder).appendingPathComponent(fileName).path
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try AutoPostProcessing(json: data, file: path)
    }

    /// Applies the choice to one case.
    public func apply(case index: Int, outputs: DeepOutputs, image: ScanImage, classCount: Int) throws -> [Int32] {
        try chosen.apply(outputs, labels: outputs.labels[index], case: index, image: image, classCount: classCount)
    }

    /// The choice as the run's `postprocessing` attribute and the stored file: `{"method": "auto", "split": …,
    /// "significance": …, "whole_map": {"rules": […], "dice_before": …, "dice_after": …, "p_value": …}, "classes":
    /// {"1": {"rules": […], …}, …}}`.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        guard let data = try? encoder.encode(record) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// What was chosen, in words (the stored evidence beside each step).
    public var summary: String {
        var parts: [String] = []
        if let whole = record.wholeMap {
            parts.append("whole map: \(Self.describe(whole))")
        }
        for key in record.classes.keys.sorted(by: { Int($0) ?? 0 < Int($1) ?? 0 }) {
            parts.append("class \(key): \(Self.describe(record.classes[key]!))")
        }
        return parts.joined(separator: "; ")
    }

    private static func describe(_ evidence: Evidence) -> String {
        let dice = { String(format: "%.4f", $0) }
        guard !evidence.steps.isEmpty else { return "none (Dice \(dice(evidence.diceBefore)))" }
        let p = evidence.pValue.map { String(format: ", p %.3g", $0) } ?? ""
        return "\(evidence.steps.joined(separator: ",")) (Dice \(dice(evidence.diceBefore)) → "
            + "\(dice(evidence.diceAfter))\(p))"
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

extension SegmentPostProcessing {
    /// Case `index` of `outputs` with `labels` in place of its argmax.
    func apply(_ outputs: DeepOutputs, labels: [Int32], case index: Int, image: ScanImage, classCount: Int) throws
        -> [Int32]
    {
        try apply(
            labels: labels, probabilities: outputs.probabilities[index], classCount: classCount,
            display: outputs.display[index].values, channels: outputs.display[index].channels,
            frames: image.frames, rows: image.rows, columns: image.columns, spacing: image.spacing)
    }
}
