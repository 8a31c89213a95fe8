import Classical
import DICOM
import DeepLab
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabSupport

/// `segment --regularize STEP[,STEP…] [--crf SPEC]`: registered post-processing steps applied in turn to a model's
/// output.
public struct SegmentPostProcessing: Sendable, Equatable {
    /// The dense CRF's parameters (`Classical.DenseCRF.Parameters`), named for callers that import only SliceLabKit.
    public typealias CRFParameters = DenseCRF.Parameters
    /// The steps; `.none` leaves the argmax as it is.
    public var pipeline: PostProcessingPipeline
    /// The dense CRF's parameters (`--crf`), used by `crf`.
    public var crf: DenseCRF.Parameters
    /// The Potts weight of `mrf`.
    public var beta: Double
    /// The classes the component rules apply to; nil for every foreground class.
    public var ruleClasses: Set<Int>?
    /// Component rules of single classes, run after `pipeline` (a `--post auto` choice, `AutoPostProcessing`).
    public var classRules: [Int: PostProcessingPipeline] = [:]

    /// Whether the labels stay as they are.
    public var isNone: Bool { pipeline.steps.isEmpty && classRules.values.allSatisfy { $0.steps.isEmpty } }

    /// The pipeline, then each class's rules: `crf; 1: largest-component; 2: fill-holes`, or `none`.
    public var summary: String {
        let rules = classRules.keys.sorted().compactMap { label in
            classRules[label].flatMap { $0.steps.isEmpty ? nil : "\(label): \($0)" }
        }
        return rules.isEmpty ? "\(pipeline)" : (["\(pipeline)"] + rules).joined(separator: "; ")
    }

    public init(
        pipeline: PostProcessingPipeline = .none, crf: DenseCRF.Parameters = DenseCRF.Parameters(), beta: Double = 1,
        ruleClasses: Set<Int>? = nil
    ) {
        (self.pipeline, self.crf, self.beta, self.ruleClasses) = (pipeline, crf, beta, ruleClasses)
    }

    /// The labels after the steps.
    ///
    /// - Parameters:
    ///   - labels: the argmax map, [frames, rows, columns] row-major.
    ///   - probabilities: the model's softmax, class-major per frame ([frames, K, rows, columns], as
    ///     `/probabilities` stores it).
    ///   - display: the display image at 0–255, pixel-major per frame with `channels` values a pixel.
    ///   - spacing: (slice, row, column) in millimetres; a multi-frame input is post-processed as one volume.
    public func apply(
        labels: [Int32], probabilities: [Float], classCount k: Int, display: [Float], channels: Int,
        frames: Int, rows: Int, columns: Int, spacing: [Double]
    ) throws -> [Int32] {
        guard !isNone else { return labels }
        let shape =
            frames > 1
            ? GridShape(slices: frames, rows: rows, columns: columns)
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
        var context = PostProcessingContext(
            classCount: k, beta: beta,
            unaryCost: {
                { pixel, c in -Double(logf(max(unary[pixel * k + c], floor))) }
            })
        context.probabilities = pixelMajor
        context.displayImage = display
        context.displayChannels = channels
        context.crf = crf
        context.ruleClasses = ruleClasses
        var map = try pipeline.apply(
            LabelGrid<Int32>(shape: shape, spacing: gridSpacing, labels: labels), context: context)
        for rules in Set(classRules.values).sorted(by: { $0.description < $1.description }) where !rules.steps.isEmpty {
            context.ruleClasses = Set(classRules.filter { $0.value == rules }.keys)
            map = try rules.apply(map, context: context)
        }
        return map.labels
    }

    /// One frame's display image at 0–255 as the CRF takes it (issue #24): for gray, the frame's values through
    /// the file's VOI window when it has one (`ScanImage.window`), else through the 1–99 % percentile window of
    /// the frame (`VOIWindow.automatic`), rounded to 8-bit grey levels as `DisplayPipeline.greyLevels` rounds
    /// them (no MONOCHROME1 inversion: the bilateral kernel sees only differences); one channel. For color, the
    /// overlay's RGB (`Overlay.displayRGB`), three channels.
    public static func display(_ image: ScanImage, frame: Int = 0) -> (values: [Float], channels: Int) {
        guard image.channels == 1 else { return (Overlay.displayRGB(image, frame: frame).map(Float.init), 3) }
        let pixels = Array(image.frame(frame))
        let window = image.window ?? VOIWindow.automatic(pixels)
        // A non-finite value shows as black (level 0), as the overlay shows it.
        let levels = DisplayPipeline.greyLevels(
            pixels.map { $0.isFinite ? $0 : -.infinity }, window: window,
            invert: false, bits: 8)
        return (levels.map(Float.init), 1)
    }
}

// MARK: - CRF parity entry point

extension SegmentPostProcessing {
    /// The CRF parity and benchmark entry point (`segment --crf-input IN.h5 --logits OUT.h5`): reads
    /// `/probabilities` Float32 [K, H, W] or [K, D, H, W] (class-major, as pydensecrf takes them) and `/image`
    /// [C, H, W] or [C, D, H, W] at 0–255 (C = 1 or 3; a volume may carry a `spacing` attribute, mm), runs the
    /// CRF and writes `/marginals` Float32 in the probabilities' shape.
    ///
    /// - Returns: the seconds the CRF took (lattices and iterations, not I/O), on the wall clock and in CPU time
    ///   of the whole process (every thread; on a shared machine the CPU time is the steadier figure).
    /// - Throws: `InputError`, `ClassicalError`, `ImageFileError`.
    public static func crfParity(input: String, output: String, parameters: DenseCRF.Parameters) throws
        -> (seconds: Double, cpuSeconds: Double)
    {
        let file = try HDF5File.open(input)
        for dataset in ["/probabilities", "/image"] where !file.exists(dataset) {
            throw InputError.invalidContent(file: input, reason: "no \(dataset) dataset")
        }
        let probabilities = try file.read("/probabilities", as: Float.self)
        let image = try file.read("/image", as: Float.self)
        let dims = Array(probabilities.shape.dropFirst())
        guard let shape = GridShape(dimensions: dims), image.shape.count == probabilities.shape.count,
            Array(image.shape.dropFirst()) == dims, [1, 3].contains(image.shape[0])
        else {
            throw InputError.invalidContent(
                file: input,
                reason: "/probabilities \(probabilities.shape) and /image "
                    + "\(image.shape) must be [K, …] and [1 or 3, …] over the same 2-D or 3-D grid")
        }
        let spacing = try? file.attribute("spacing", at: "/image").doubleValues
        let (k, channels, n) = (probabilities.shape[0], image.shape[0], shape.count)
        /// [count, n] → [n, count], in blocks of 64 pixels so reads and writes both stay in cache.
        func pixelMajor(_ values: [Float], _ count: Int) -> [Float] {
            [Float](unsafeUninitializedCapacity: values.count) { out, initialised in
                values.withUnsafeBufferPointer { values in
                    for first in stride(from: 0, to: n, by: 64) {
                        let end = min(first + 64, n)
                        for c in 0..<count {
                            for p in first..<end { out[p * count + c] = values[c * n + p] }
                        }
                    }
                }
                initialised = values.count
            }
        }
        func cpuClock() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
        }
        let (start, cpuStart) = (Date(), cpuClock())
        let marginals = try DenseCRF.marginals(
            probabilities: pixelMajor(probabilities.values, k), classCount: k,
            image: pixelMajor(image.values, channels), channels: channels,
            shape: shape, spacing: spacing, parameters: parameters)
        let seconds = Date().timeIntervalSince(start)
        let cpuSeconds = cpuClock() - cpuStart
        var classMajor = [Float](repeating: 0, count: marginals.count)
        for p in 0..<n { for c in 0..<k { classMajor[c * n + p] = marginals[p * k + c] } }
        try HDF5File.write(to: output, updating: false) { out in
            try out.write(classMajor, shape: probabilities.shape, to: "/marginals")
        }
        return (seconds, cpuSeconds)
    }
}
