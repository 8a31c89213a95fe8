import Classical
import DeepLab
import Foundation
import SliceLabSupport

/// `segment --regularize STEP [--crf SPEC]`: a registered post-processing step applied to a model's output.
public struct SegmentPostProcessing: Sendable, Equatable {
    /// The step; `.none` leaves the argmax as it is.
    public var step: ClusterRegularizer
    /// The dense CRF's parameters (`--crf`), used by `crf`.
    public var crf: DenseCRF.Parameters
    /// The Potts weight of `mrf`.
    public var beta: Double
    /// The classes the component rules apply to; nil for every foreground class.
    public var ruleClasses: Set<Int>?

    public init(step: ClusterRegularizer = .none, crf: DenseCRF.Parameters = DenseCRF.Parameters(), beta: Double = 1,
                ruleClasses: Set<Int>? = nil) {
        (self.step, self.crf, self.beta, self.ruleClasses) = (step, crf, beta, ruleClasses)
    }

    /// Parses a `--crf` spec (`iterations=5,gaussian-sxy=3,…`).
    ///
    /// - Throws: `ClassicalError.invalidArgument` for an unknown key, a malformed value or a non-positive width.
    public static func crfParameters(parsing spec: String) throws -> DenseCRF.Parameters {
        try DenseCRF.Parameters(parsing: spec)
    }

    /// The keys a `--crf` spec takes.
    public static var crfKeys: [String] { DenseCRF.Parameters.keys }

    /// The labels after the step.
    ///
    /// - Parameters:
    ///   - labels: the argmax map, [frames, rows, columns] row-major.
    ///   - probabilities: the model's softmax, class-major per frame ([frames, K, rows, columns], as
    ///     `/probabilities` stores it).
    ///   - display: the display image at 0–255, pixel-major per frame with `channels` values a pixel.
    ///   - spacing: (slice, row, column) in millimetres; a multi-frame input is post-processed as one volume.
    func apply(labels: [Int32], probabilities: [Float], classCount k: Int, display: [Float], channels: Int,
               frames: Int, rows: Int, columns: Int, spacing: [Double]) throws -> [Int32] {
        guard let registered = PostProcessingSteps.named(step), step != .none else { return labels }
        let shape = frames > 1 ? GridShape(slices: frames, rows: rows, columns: columns)
            : GridShape(rows: rows, columns: columns)
        let gridSpacing = frames > 1 ? spacing : Array(spacing.suffix(2))
        let plane = rows * columns
        var pixelMajor = [Float](repeating: 0, count: probabilities.count)
        for frame in 0..<frames {
            for c in 0..<k {
                let source = (frame * k + c) * plane
                for p in 0..<plane { pixelMajor[(frame * plane + p) * k + c] = probabilities[source + p] }
            }
        }
        let floor = DenseCRF.probabilityFloor
        let unary = pixelMajor
        var context = PostProcessingContext(classCount: k, beta: beta, unaryCost: {
            { pixel, c in -Double(logf(max(unary[pixel * k + c], floor))) }
        })
        context.probabilities = pixelMajor
        context.displayImage = display
        context.displayChannels = channels
        context.crf = crf
        context.ruleClasses = ruleClasses
        let map = LabelGrid<Int32>(shape: shape, spacing: gridSpacing, labels: labels)
        return try registered.apply(map, context: context).labels
    }

    /// One frame's display image at 0–255 as the CRF takes it: the overlay's (`Overlay.displayRGB`), one
    /// channel for gray, three for color.
    static func display(_ image: ScanImage, frame: Int = 0) -> (values: [Float], channels: Int) {
        let rgb = Overlay.displayRGB(image, frame: frame)
        if image.channels == 1 { return (stride(from: 0, to: rgb.count, by: 3).map { Float(rgb[$0]) }, 1) }
        return (rgb.map(Float.init), 3)
    }
}
