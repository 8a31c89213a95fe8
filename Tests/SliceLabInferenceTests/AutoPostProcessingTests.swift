import Foundation
import Testing

@testable import SliceLabIO
@testable import SliceLabInference

/// `--post auto`'s choice on made outputs: a rule is kept when it raises the mean Dice and, with a significance
/// level, when the paired Wilcoxon test passes; the choice round-trips through its stored JSON.
struct AutoPostProcessingTests {
    /// `count` 12 × 12 cases: class 1 a 5 × 5 square, class 2 a 3 × 3 square, predicted exactly except for a
    /// stray class-1 blob of 1…count pixels (distinct sizes, so the paired differences have no ties).
    static func cases(_ count: Int) -> (DeepOutputs, [ScanImage], [[Int32]]) {
        var outputs = DeepOutputs()
        var (images, references) = ([ScanImage](), [[Int32]]())
        for index in 0..<count {
            var reference = [Int32](repeating: 0, count: 144)
            for r in 1..<6 { for c in 1..<6 { reference[r * 12 + c] = 1 } }
            for r in 8..<11 { for c in 1..<4 { reference[r * 12 + c] = 2 } }
            var prediction = reference
            for p in 0...index { prediction[(8 + p / 3) * 12 + 7 + p % 3] = 1 }
            var probabilities = [Float](repeating: 0, count: 3 * 144)
            for (p, label) in prediction.enumerated() { probabilities[Int(label) * 144 + p] = 1 }
            outputs.labels.append(prediction)
            outputs.probabilities.append(probabilities)
            outputs.display.append(([Float](repeating: 0, count: 144), 1))
            images.append(
                ScanImage(
                    frames: 1, rows: 12, columns: 12, channels: 1, values: [Float](repeating: 0, count: 144),
                    source: "case\(index)"))
            references.append(reference)
        }
        return (outputs, images, references)
    }

    @Test func keepsWhatHelpsSignificantlyAndRoundTrips() throws {
        let (outputs, images, references) = Self.cases(8)
        let choice = try AutoPostProcessing(
            outputs: outputs, images: images, references: references, classCount: 3, split: "val",
            significance: 0.05)
        // Removing the stray blob helps class 1 on all 8 cases: exact p = 2 / 2^8.
        #expect(choice.chosen.classRules == [1: PostProcessingPipeline([.largestComponent])])
        #expect(choice.chosen.pipeline == .none)
        #expect(choice.summary.contains("class 1: largest-component") && choice.summary.contains("p 0.00781"))
        #expect(choice.summary.contains("class 2: none"))
        for index in images.indices {
            #expect(
                try choice.apply(case: index, outputs: outputs, image: images[index], classCount: 3)
                    == references[index])
        }
        let stored = try AutoPostProcessing(json: Data(choice.json.utf8), file: "p.json")
        #expect(stored == choice)
        #expect(throws: InferenceError.self) {
            try AutoPostProcessing(
                json: Data(
                    #"{"method": "auto", "split": "val", "classes": {"1": {"rules": ["blur"], "dice_before": 1, "dice_after": 1}}}"#
                        .utf8), file: "p.json")
        }
    }

    @Test func fewCasesPassTheMeanButNotTheTest() throws {
        let (outputs, images, references) = Self.cases(5)
        let strict = try AutoPostProcessing(
            outputs: outputs, images: images, references: references, classCount: 3, split: "val",
            significance: 0.05)
        // Five positive differences: the smallest two-sided p is 2 / 2^5 = 0.0625.
        #expect(strict.chosen.isNone)
        let byMean = try AutoPostProcessing(
            outputs: outputs, images: images, references: references, classCount: 3, split: "val")
        #expect(byMean.chosen.classRules == [1: PostProcessingPipeline([.largestComponent])])
    }
}
