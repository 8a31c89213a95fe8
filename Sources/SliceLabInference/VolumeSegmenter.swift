import DeepLab
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabSupport

/// How a 2-D model takes the slices of a volume, stored in its checkpoint by `train` and applied by `segment`:
/// how many neighbouring slices on each side are extra input channels (2.5-D context), and the in-plane spacing
/// the model was trained at.
///
/// Checkpoint root attributes: `slice_context` (integer N; absent means 0) and `training_spacing` (row, column
/// in millimetres; absent means the input is never resampled).
public struct SliceSampling: Equatable, Sendable {
    /// N: slices z − N … z + N feed the model for slice z (edge slices replicated).
    public var context: Int
    /// The in-plane spacing (row, column) in millimetres the model was trained at, or nil.
    public var spacing: [Double]?

    public static let contextAttribute = "slice_context"
    public static let spacingAttribute = "training_spacing"

    public init(context: Int = 0, spacing: [Double]? = nil) {
        (self.context, self.spacing) = (context, spacing)
    }

    /// Slices per network input: 2N + 1.
    public var slicesPerInput: Int { 2 * context + 1 }

    /// Reads the attributes from a checkpoint file.
    ///
    /// - Throws: `DeepLabError.invalidCheckpoint` for a negative context or a spacing that is not two positive
    ///   numbers; `ImageFileError` when the file cannot be read.
    public static func read(from file: HDF5File) throws -> SliceSampling {
        var sampling = SliceSampling()
        if file.hasAttribute(contextAttribute) {
            guard let value = try file.attribute(contextAttribute).doubleValues?.first, value >= 0, value <= 16,
                value == value.rounded()
            else {
                throw DeepLabError.invalidCheckpoint(
                    file: file.path,
                    reason: "\(contextAttribute) must be a whole "
                        + "number in 0...16")
            }
            sampling.context = Int(value)
        }
        if file.hasAttribute(spacingAttribute) {
            guard let spacing = try file.attribute(spacingAttribute).doubleValues, spacing.count == 2,
                spacing.allSatisfy({ $0 > 0 && $0.isFinite })
            else {
                throw DeepLabError.invalidCheckpoint(
                    file: file.path,
                    reason: "\(spacingAttribute) must be (row, "
                        + "column) in millimetres, both > 0")
            }
            sampling.spacing = spacing
        }
        return sampling
    }

    /// Reads the attributes of the checkpoint at `path` (see `read(from:)`).
    public static func read(_ path: String) throws -> SliceSampling { try read(from: HDF5File.open(path)) }

    /// Writes the attributes into a checkpoint being written (the spacing only when known).
    /// Rests on `HDF5File.setAttribute`.
    public func write(into file: HDF5File) throws {
        try file.setAttribute(Self.contextAttribute, .int(Int64(context)))
        if let spacing { try file.setAttribute(Self.spacingAttribute, .doubles(spacing)) }
    }
}

/// Segment-a-volume: a 2-D DeepLabV3 model applied slice by slice along the volume's first (acquisition) axis,
/// with the checkpoint's 2.5-D context and in-plane resampling. The one place `segment` (and any workflow that
/// runs a model over volumes) turns a volume into labels.
///
/// Per slice z: slices z − N … z + N (clamped to the volume, so edge slices repeat) are each converted to the
/// model's channels per slice (RGB averaged to gray, gray repeated), stacked slice-major into
/// `(2N + 1) × channels` planes, normalised together with the checkpoint's preprocessing (as `train` builds
/// its inputs, `TrainWorkflow.contextInput`), resampled bilinearly to the training spacing when the checkpoint
/// has one and the volume's spacing is known, run through the model (tiled by `window`), and the logits
/// resampled bilinearly back to the slice's grid before the softmax and argmax.
public struct VolumeSegmenter {
    /// The model, or an ensemble's first member.
    public let model: DeepLabV3
    /// The models whose softmax outputs are averaged, `model` first (one for a plain segmenter).
    public internal(set) var members: [DeepLabV3]
    /// The views of each slice the members see (`TestTimeAugmentation`); the slice as it is by default.
    public internal(set) var views = TestTimeAugmentation.none.views(rows: false, columns: false)
    /// The axes mirroring may flip (`augment`).
    var mirrorAxes = MirrorAxes()
    /// Each further ensemble member's training spacing (folds of one set differ a little): every member resamples
    /// a slice to its own and back, so that its probabilities are averaged on the slice's grid.
    var memberSpacings: [ObjectIdentifier: [Double]?] = [:]
    public let preprocessing: Preprocessing
    public let sampling: SliceSampling
    public var window: SlidingWindow
    /// What the model's forward passes have done so far (shared by copies of the segmenter).
    public let statistics = ForwardStatistics()

    public init(
        model: DeepLabV3, preprocessing: Preprocessing, sampling: SliceSampling = SliceSampling(),
        window: SlidingWindow = SlidingWindow()
    ) {
        (self.model, self.preprocessing, self.sampling, self.window) = (model, preprocessing, sampling, window)
        members = [model]
    }

    /// Loads a checkpoint's model, preprocessing and slice sampling, for a process that infers from now on: tensor
    /// buffers stay mapped from pass to pass (`TensorMemoryPolicy.keepWorkingSet`).
    ///
    /// - Parameters:
    ///   - context: the context the caller expects (`--context`); nil takes the checkpoint's.
    ///   - precision: `--precision` (bf16 is applied; nil or the checkpoint's own leaves it).
    /// - Throws: `InputError.invalidContent` naming the checkpoint when `context` differs from the one it was
    ///   trained with or its input channels are not a multiple of 2N + 1; `DeepLabError`, `ImageFileError`.
    ///   - tileSize, tileStep: `--tile-size` (network pixels; 0 whole images; nil the training crop) and
    ///     `--tile-step` (see `SlidingWindow`).
    public static func load(
        checkpoint path: String, context: Int? = nil, tileSize: Int? = nil, tileStep: Double = 0.5,
        limits: ReadLimits = .standard, precision: Precision? = nil
    ) throws -> VolumeSegmenter {
        TensorMemoryPolicy.keepWorkingSet()
        let file = try HDF5File.open(path)
        let (model, preprocessing) = try DeepLabCheckpoint.read(from: file)
        try precision?.select(for: model)
        let sampling = try SliceSampling.read(from: file)
        if let context, context != sampling.context {
            throw InputError.invalidContent(
                file: path,
                reason: "the model was trained with --context "
                    + "\(sampling.context), not \(context)")
        }
        guard model.configuration.inputChannels % sampling.slicesPerInput == 0 else {
            throw InputError.invalidContent(
                file: path,
                reason: "\(model.configuration.inputChannels) input "
                    + "channels cannot be \(sampling.slicesPerInput) slices of context \(sampling.context)")
        }
        let window = SlidingWindow(
            tileSize: tileSize, step: tileStep,
            trainingTile: try trainingCrop(file) * model.configuration.inputScale,
            budget: SlidingWindow.Budget(
                bytesPerPixel: model.configuration.architecture.traits.trainingBytesPerPixel,
                maxBytes: limits.maxBytes))
        return VolumeSegmenter(model: model, preprocessing: preprocessing, sampling: sampling, window: window)
    }

    /// The crop a checkpoint was trained on (input pixels): its plan's (`train` stores the plan in every checkpoint),
    /// else its recorded training configuration's; 0 when it records neither.
    static func trainingCrop(_ file: HDF5File) throws -> Int {
        if let crop = try json(file, "plan")?["cropSize"] as? Int { return crop }
        return try trainingAugmentation(file)?["cropSize"] as? Int ?? 0
    }

    /// The augmentation a checkpoint was trained with, as recorded: the `configuration` of `train`'s `/training`
    /// group, or a packed model's `training_configuration`; nil when it records neither.
    static func trainingAugmentation(_ file: HDF5File) throws -> [String: Any]? {
        let configuration = try json(file, "configuration", at: "/training") ?? json(file, "training_configuration")
        return configuration?["augmentation"] as? [String: Any]
    }

    /// A JSON attribute of the checkpoint, or nil.
    private static func json(_ file: HDF5File, _ name: String, at path: String = "/") throws -> [String: Any]? {
        guard path == "/" || file.exists(path), file.hasAttribute(name, at: path),
            let text = try file.attribute(name, at: path).stringValue
        else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    /// The model's input channels per slice: its input channels / (2N + 1).
    public var channelsPerSlice: Int { model.configuration.inputChannels / sampling.slicesPerInput }

    /// Classes K.
    public var classCount: Int { model.configuration.classCount }

    // MARK: - Streaming

    /// Segments a volume slice by slice, reading each slice once (twice under z-score normalisation, whose
    /// statistics are the whole volume's: a first pass computes them) and holding at most 2N + `batch` of them.
    ///
    /// - Parameters:
    ///   - shape: slices, rows, columns and channels of the volume.
    ///   - spacing: (slice, row, column) in millimetres when known; nil never resamples.
    ///   - source: the volume's file, for errors.
    ///   - batch: slices per forward pass (`segment --batch`); each slice's logits are what batch 1 gives it, to
    ///     float32 rounding. Memory holds `batch` slices' inputs and logits, whatever the number of slices.
    ///   - slice: slice z's values, [rows, columns, channels] row-major (channels last).
    ///   - emit: called in slice order with z and the slice's logits [1, K, rows, columns].
    /// - Throws: `InputError.invalidContent` when the volume's channels cannot become the model's; whatever
    ///   `slice`, `emit` and the model throw.
    public func run(
        slices: Int, rows: Int, columns: Int, channels: Int, spacing: [Double]?, source: String,
        batch: Int = 1, slice: (Int) throws -> [Float],
        emit: (Int, FloatTensor) throws -> Void
    ) throws {
        try runOutputs(
            slices: slices, rows: rows, columns: columns, channels: channels, spacing: spacing, source: source,
            batch: batch, slice: slice
        ) { try emit($0, $1.logits) }
    }

    /// `run`, handing out each slice's `SliceOutput` (its logits and, for an ensemble or views, the members' and
    /// views' mean entropy).
    public func runOutputs(
        slices: Int, rows: Int, columns: Int, channels: Int, spacing: [Double]?, source: String,
        batch: Int = 1, slice: (Int) throws -> [Float],
        emit: (Int, SliceOutput) throws -> Void
    ) throws {
        let perSlice = channelsPerSlice
        guard channels == perSlice || perSlice == 1 || channels == 1 else {
            throw InputError.invalidContent(
                file: source,
                reason: "the volume has \(channels) channels per voxel; "
                    + "the model takes \(perSlice) per slice")
        }
        let n = sampling.context
        var preprocessing = preprocessing
        if preprocessing.usesCaseStatistics {
            var statistics = Preprocessing.CaseStatistics()
            for z in 0..<slices {
                statistics.add(
                    Self.channelMajor(try slice(z), pixels: rows * columns, channels: channels, to: perSlice))
            }
            preprocessing = preprocessing.forCase(statistics.value)
        }
        var cache: [Int: [Float]] = [:]
        var pending: [(z: Int, input: [Float])] = []
        func flush() throws {
            guard !pending.isEmpty else { return }
            let outputs = try self.outputs(
                pending.map(\.input), channels: perSlice * (2 * n + 1), rows: rows,
                columns: columns, spacing: spacing)
            let done = pending
            pending.removeAll(keepingCapacity: true)
            for (item, output) in zip(done, outputs) { try emit(item.z, output) }
        }
        for z in 0..<slices {
            let neighbours = (-n...n).map { min(max(z + $0, 0), slices - 1) }
            for index in neighbours where cache[index] == nil { cache[index] = try slice(index) }
            for index in cache.keys where index < z - n { cache[index] = nil }
            pending.append(
                (
                    z,
                    Self.stackedInput(
                        neighbours.map { cache[$0]! }, pixels: rows * columns,
                        channels: channels, perSlice: perSlice,
                        preprocessing: preprocessing)
                ))
            if pending.count >= max(1, batch) { try flush() }
        }
        try flush()
    }

    /// Logits [1, K, rows, columns] of one prepared input [C, rows, columns]: resampled to the training spacing
    /// and back when both spacings are known and differ by more than 0.1 %.
    func logits(_ input: [Float], channels: Int, rows: Int, columns: Int, spacing: [Double]?) throws -> FloatTensor {
        try logits([input], channels: channels, rows: rows, columns: columns, spacing: spacing)[0]
    }

    /// The logits [1, K, rows, columns] of each prepared input [C, rows, columns], the inputs run as one batch
    /// (resampled as `logits(_:channels:rows:columns:spacing:)` resamples one); for an ensemble or with test-time
    /// views, the log of the mean softmax (`averagedLogProbabilities`). Adds to `statistics`.
    func logits(
        _ inputs: [[Float]], channels: Int, rows: Int, columns: Int,
        spacing: [Double]?
    ) throws -> [FloatTensor] {
        try outputs(inputs, channels: channels, rows: rows, columns: columns, spacing: spacing).map(\.logits)
    }

    /// `logits`, with the mean entropy of an ensemble's or views' passes.
    func outputs(
        _ inputs: [[Float]], channels: Int, rows: Int, columns: Int, spacing: [Double]?
    ) throws -> [SliceOutput] {
        statistics.slices += inputs.count
        guard passesPerSlice == 1 else {
            return try averagedLogProbabilities(
                inputs, channels: channels, rows: rows, columns: columns, spacing: spacing)
        }
        return try forward(model, inputs, channels: channels, rows: rows, columns: columns, spacing: spacing).map {
            SliceOutput(logits: $0, expectedEntropy: nil)
        }
    }

    /// One model's logits [1, K, rows, columns] of each prepared input, the inputs run as one batch at the
    /// training spacing (and `scale` times that grid), the logits resampled back to the inputs' grid.
    func forward(
        _ model: DeepLabV3, _ inputs: [[Float]], channels: Int, rows: Int, columns: Int, spacing: [Double]?,
        scale: Double = 1
    ) throws -> [FloatTensor] {
        let training = model === self.model ? sampling.spacing : memberSpacings[ObjectIdentifier(model)] ?? nil
        var target = resampledSize(rows: rows, columns: columns, spacing: spacing, training: training)
        if scale != 1 {
            let grid = target ?? (rows, columns)
            target = (
                max(1, Int((Double(grid.rows) * scale).rounded())),
                max(1, Int((Double(grid.columns) * scale).rounded()))
            )
        }
        let (modelRows, modelColumns) = target ?? (rows, columns)
        var stacked: [Float] = []
        stacked.reserveCapacity(inputs.count * channels * modelRows * modelColumns)
        for input in inputs {
            stacked +=
                target == nil
                ? input
                : BilinearResampling.resample(
                    input, planes: channels, rows: rows,
                    columns: columns, toRows: modelRows,
                    toColumns: modelColumns)
        }
        let start = DispatchTime.now().uptimeNanoseconds
        let out = try window.logits(
            model,
            FloatTensor(
                shape: [inputs.count, channels, modelRows, modelColumns],
                values: stacked))
        statistics.forwardSeconds += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        statistics.forwards += 1
        let k = out.shape[1]
        let plane = k * modelRows * modelColumns
        // Each output resampled back on its own compute thread (a member's views run as one batch).
        var outputs = [[Float]](repeating: [], count: inputs.count)
        outputs.withUnsafeMutableBufferPointer { outputs in
            concurrentForEach(0..<inputs.count) { b in
                let values = Array(out.values[(b * plane)..<((b + 1) * plane)])
                outputs[b] =
                    target == nil
                    ? values
                    : BilinearResampling.resample(
                        values, planes: k, rows: modelRows, columns: modelColumns, toRows: rows,
                        toColumns: columns)
            }
        }
        return outputs.map { FloatTensor(shape: [1, k, rows, columns], values: $0) }
    }

    /// The grid a slice is resampled to for the model, or nil when it is not resampled: each in-plane extent
    /// scaled by input spacing / training spacing, rounded, at least 1.
    public func resampledSize(rows: Int, columns: Int, spacing: [Double]?) -> (rows: Int, columns: Int)? {
        resampledSize(rows: rows, columns: columns, spacing: spacing, training: sampling.spacing)
    }

    /// `resampledSize` for a model trained at `training` spacing (an ensemble member's own).
    func resampledSize(
        rows: Int, columns: Int, spacing: [Double]?, training target: [Double]?
    ) -> (rows: Int, columns: Int)? {
        guard let target, let spacing, spacing.count == 3 else { return nil }
        let (row, column) = (spacing[1], spacing[2])
        guard abs(row / target[0] - 1) > 1e-3 || abs(column / target[1] - 1) > 1e-3 else { return nil }
        return (
            max(1, Int((Double(rows) * row / target[0]).rounded())),
            max(1, Int((Double(columns) * column / target[1]).rounded()))
        )
    }

    // MARK: - Whole volumes

    /// A segmented volume: labels [z, y, x] and, when asked, the softmax [z, K, y, x].
    public struct Result: Sendable {
        public var labels: [Int32]
        public var probabilities: [Float]?
    }

    /// Segments a volume held in memory.
    ///
    /// - Parameters:
    ///   - values: Float32 [z, y, x] or [z, y, x, c] (channels last), in the image's units.
    ///   - shape: [z, y, x] or [z, y, x, c].
    ///   - geometry: the volume's geometry; its spacing (z, y, x) decides the in-plane resampling. Nil: no
    ///     resampling.
    ///   - probabilities: whether to keep the softmax of every slice (K floats a voxel).
    ///   - batch: slices per forward pass (see `run`).
    /// - Throws: `InputError.invalidContent` for a shape that does not fit the values or the model; the model's
    ///   errors.
    public func segment(
        _ values: [Float], shape: [Int], geometry: VolumeGeometry?, probabilities: Bool = false,
        source: String = "volume", batch: Int = 1
    ) throws -> Result {
        guard shape.count == 3 || shape.count == 4, shape.allSatisfy({ $0 > 0 }),
            shape.reduce(1, *) == values.count
        else {
            throw InputError.invalidContent(
                file: source,
                reason: "a volume is [z, y, x] or [z, y, x, c]; "
                    + "\(values.count) values do not fill \(shape)")
        }
        let (slices, rows, columns) = (shape[0], shape[1], shape[2])
        let channels = shape.count == 4 ? shape[3] : 1
        let size = rows * columns * channels
        var result = Result(labels: [], probabilities: probabilities ? [] : nil)
        result.labels.reserveCapacity(slices * rows * columns)
        try run(
            slices: slices, rows: rows, columns: columns, channels: channels, spacing: geometry?.spacing,
            source: source, batch: batch, slice: { Array(values[($0 * size)..<(($0 + 1) * size)]) }
        ) {
            _, logits in
            result.labels += argmaxOverClasses(logits)
            if probabilities { result.probabilities! += softmaxOverClasses(logits).values }
        }
        return result
    }

    // MARK: - Helpers

    /// The network input of one slice from its 2N + 1 neighbours (channels-last values, slice z − N first):
    /// each converted to `perSlice` channel-major planes, stacked in order, preprocessed together.
    static func stackedInput(
        _ neighbours: [[Float]], pixels: Int, channels: Int, perSlice: Int,
        preprocessing: Preprocessing
    ) -> [Float] {
        var values = Array(
            neighbours.map { channelMajor($0, pixels: pixels, channels: channels, to: perSlice) }
                .joined())
        preprocessing.apply(to: &values)
        return values
    }

    /// One slice's channels-last values [pixels, channels] as `perSlice` channel-major planes: unchanged, RGB
    /// (or any channels) averaged to one plane, or one plane repeated.
    static func channelMajor(_ values: [Float], pixels: Int, channels: Int, to perSlice: Int) -> [Float] {
        if channels == 1 { return Array([[Float]](repeating: values, count: perSlice).joined()) }
        if perSlice == 1 {
            var gray = [Float](repeating: 0, count: pixels)
            for p in 0..<pixels {
                var sum: Float = 0
                for c in 0..<channels { sum += values[p * channels + c] }
                gray[p] = sum / Float(channels)
            }
            return gray
        }
        var out = [Float](repeating: 0, count: pixels * channels)
        for p in 0..<pixels { for c in 0..<channels { out[c * pixels + p] = values[p * channels + c] } }
        return out
    }
}

/// Counts of a segmenter's forward passes, for `segment --timings`.
// @unchecked Sendable: only the segmenter's `run` writes the counts, on the thread that runs it (the network's
// own parallelism is inside oneDNN); callers read them after `run` returns.
public final class ForwardStatistics: @unchecked Sendable {
    /// Forward passes (one per batch; a tiled batch counts once).
    public internal(set) var forwards = 0
    /// Slices the passes computed.
    public internal(set) var slices = 0
    /// Wall-clock seconds inside the passes (the network and its tiling; not the resampling around it).
    public internal(set) var forwardSeconds = 0.0
}

extension VolumeSegmenter {
    /// The model's labels for a case ([frames, rows, columns]) as `segment` computes them, and with
    /// `probabilities` its softmax [frames, K, rows, columns]: slice by slice along the first axis with the
    /// checkpoint's context slices, resampled in-plane to its training spacing when the case has a spacing.
    public func segment(_ image: ScanImage, probabilities: Bool = false) throws -> Result {
        let geometry =
            image.hasSpacing
            ? VolumeGeometry(
                spacing: image.spacing, origin: [0, 0, 0],
                direction: VolumeGeometry.identity.direction) : nil
        var shape = [image.frames, image.rows, image.columns]
        if image.channels > 1 { shape.append(image.channels) }
        return try segment(
            image.values, shape: shape, geometry: geometry, probabilities: probabilities,
            source: image.source)
    }
}
