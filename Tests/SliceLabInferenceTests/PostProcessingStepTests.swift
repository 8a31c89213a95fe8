import Classical
import DICOM
import Foundation
import SliceLabSupport
import Testing

@testable import SliceLabIO
@testable import SliceLabInference

/// The post-processing steps and pipelines on hand-made maps, and the display image the CRF takes.
struct PostProcessingStepTests {
    static func grid(_ rows: [[Int32]]) -> LabelGrid<Int32> {
        LabelGrid(shape: GridShape(rows: rows.count, columns: rows[0].count), labels: rows.flatMap { $0 })
    }

    static var context: PostProcessingContext { PostProcessingContext(classCount: 3, beta: 1, unaryCost: nil) }

    @Test func largestComponentKeepsOnlyEachClassesLargestFaceConnectedPart() throws {
        let map = Self.grid([
            [1, 1, 0, 1],
            [1, 0, 0, 0],
            [0, 2, 0, 2],
            [0, 2, 0, 2]
        ])
        let result = try LargestComponent.apply(map, context: Self.context)
        #expect(
            result.labels
                == Self.grid([
                    [1, 1, 0, 0],
                    [1, 0, 0, 0],
                    [0, 2, 0, 0],
                    [0, 2, 0, 0]
                ]).labels)
        var onlyTwo = Self.context
        onlyTwo.ruleClasses = [2]
        #expect(try LargestComponent.apply(map, context: onlyTwo).labels[3] == 1)
    }

    @Test func fillHolesFillsBackgroundEnclosedByOneClassOnly() throws {
        let map = Self.grid([
            [1, 1, 1, 0, 0],
            [1, 0, 1, 0, 2],
            [1, 1, 1, 2, 0],
            [0, 0, 0, 0, 2]
        ])
        let result = try FillHoles.apply(map, context: Self.context)
        #expect(result.labels[1 * 5 + 1] == 1)  // enclosed by class 1
        #expect(result.labels[2 * 5 + 4] == 0)  // touches the edge
        #expect(result.labels[0] == 1 && result.labels[3 * 5] == 0)
    }

    /// A pipeline runs its steps in order (MONAI's `Compose`): `largest-component,fill-holes` on a map is
    /// `fill-holes` on `largest-component`'s output, which differs from the other order here.
    @Test func pipelineRunsItsStepsInOrder() throws {
        let map = Self.grid([
            [1, 1, 1, 0, 0, 1],
            [1, 0, 1, 0, 0, 0],
            [1, 1, 1, 0, 2, 2],
            [0, 0, 0, 0, 2, 2]
        ])
        let pipeline = try PostProcessingPipeline(parsing: "largest-component,fill-holes")
        #expect(pipeline.steps == [.largestComponent, .fillHoles])
        #expect("\(pipeline)" == "largest-component,fill-holes")
        let chained = try pipeline.apply(map, context: Self.context)
        let byHand = try FillHoles.apply(LargestComponent.apply(map, context: Self.context), context: Self.context)
        #expect(chained.labels == byHand.labels)
        #expect(chained.labels[1 * 6 + 1] == 1 && chained.labels[5] == 0)
        #expect(try PostProcessingPipeline(parsing: "none") == .none && "\(PostProcessingPipeline.none)" == "none")
        #expect(throws: InferenceError.self) { try PostProcessingPipeline(parsing: "largest-component,blur") }
        #expect(try PostProcessingPipeline(parsing: "majority+crf", separator: "+").stepNeedingProbabilities == .crf)
    }

    /// The CRF's intensities (issue #24): a gray image through the file's VOI window when it has one, else
    /// through its 1–99 % percentile window, as 8-bit levels; a color image keeps its three channels.
    @Test func crfDisplayUsesTheFilesWindowElseThePercentileWindow() {
        let values = (0..<100).map { Float($0) }
        var image = ScanImage(frames: 1, rows: 10, columns: 10, channels: 1, values: values, source: "test")
        // numpy.percentile(range(100), [1, 99]) = 0.99, 98.01 (linear interpolation).
        let (low, high): (Float, Float) = (0.99, 98.01)
        func level(_ y: Float) -> Float { max(0, min(255, y)).rounded() }
        let automatic = SegmentPostProcessing.display(image)
        #expect(automatic.channels == 1)
        let expectedAutomatic = values.map { level(($0 - low) / (high - low) * 255) }
        #expect(zip(automatic.values, expectedAutomatic).allSatisfy { abs($0 - $1) <= 1 })
        #expect(automatic.values[2] == 3 && automatic.values[97] == 252)  // the 0.5–99.5 % stretch gives 4, 251
        image.window = VOIWindow(center: 50, width: 20, function: .linearExact)
        let windowed = SegmentPostProcessing.display(image)
        let expectedWindowed = values.map { level((($0 - 50) / 20 + 0.5) * 255) }
        #expect(zip(windowed.values, expectedWindowed).allSatisfy { abs($0 - $1) <= 1 })
        #expect(windowed.values[40] == 0 && windowed.values[50] == 128 && windowed.values[61] == 255)
        let color = ScanImage(
            frames: 1, rows: 2, columns: 2, channels: 3, values: (0..<12).map { Float($0 * 20) },
            source: "test")
        let shown = SegmentPostProcessing.display(color)
        #expect(shown.channels == 3 && shown.values == (0..<12).map { Float($0 * 20) })
    }

    @Test func crfStepRefusesALabelOnlyInput() {
        let map = Self.grid([[0, 1], [1, 0]])
        #expect(throws: InferenceError.needsProbabilities(step: "crf")) {
            try DenseCRFStep.apply(map, context: Self.context)
        }
        #expect(PostProcessingStepName.crf.needsProbabilities && !PostProcessingStepName.mrf.needsProbabilities)
    }
}
