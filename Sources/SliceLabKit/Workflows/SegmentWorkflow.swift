import DICOM
import DeepLab
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabInference
import SliceLabSupport

/// `slicelab segment`: a DeepLabV3 checkpoint applied to an image or series, and the torchvision parity entry
/// point (raw tensors in, logits out).
public enum SegmentWorkflow {
    /// Options of a segmentation run.
    public struct Options: Sendable {
        public var input: String
        public var model: String
        public var output: String
        public var overlay: String?
        /// The overlay's colours (`--palette`).
        public var palette: Overlay.Palette = .distinct
        public var probabilities: Bool
        public var threads: Int?
        /// `--tile-size` in network pixels; 0 whole images; nil tiles of the training crop (see `SlidingWindow`).
        public var tileSize: Int?
        /// `--tile-step`: the distance between tiles as a fraction of the tile.
        public var tileStep = 0.5
        /// The bound on decoded sizes the input is read with (`--max-memory`); it applies to each frame.
        public var limits: ReadLimits
        /// The step applied to the model's output (`--regularize`, `--crf`); `/probabilities` keeps the
        /// model's output before it.
        public var postProcessing = SegmentPostProcessing()
        /// `--context N`: the 2.5-D context the caller expects; nil takes the checkpoint's, and a different one
        /// is refused.
        public var context: Int?
        /// `--precision`: bf16 runs the model's convolutions in bf16; nil runs the checkpoint's own precision.
        public var precision: Precision?
        /// `--batch N`: slices per forward pass; the labels are those of batch 1 (see `VolumeSegmenter.run`).
        public var batch = 1
        /// `--timings`: log slices per second, the achieved rate against the ISA's peak and the peak RSS
        /// (`SegmentThroughput`).
        public var timings = false
        /// Further checkpoints (`--model` given again) whose softmax is averaged with `model`'s.
        public var ensemble: [String] = []
        /// `--tta`; nil takes the segmenter's `defaultAugmentation`.
        public var augmentation: TestTimeAugmentation?
        /// `--uncertainty OUT.h5|OUT.nii.gz`: per-voxel predictive entropy and, for an ensemble or views, mutual
        /// information, in the labels' geometry.
        public var uncertainty: String?
        /// What a `.dcm` output is: a DICOM SEG or an RT Structure Set (`--dicom-output`).
        public var dicomOutput: SegmentationExport.DICOMOutput = .seg

        public init(
            input: String, model: String, output: String, overlay: String? = nil, probabilities: Bool = false,
            threads: Int? = nil, tileSize: Int? = nil, limits: ReadLimits = .standard
        ) {
            self.input = input
            self.model = model
            self.output = output
            self.overlay = overlay
            self.probabilities = probabilities
            self.threads = threads
            self.tileSize = tileSize
            self.limits = limits
        }
    }

    /// Segments every slice of the input with the checkpoint's model, preprocessing and slice sampling
    /// (`VolumeSegmenter`: 2.5-D context, in-plane resampling to the training spacing) and writes the label map
    /// in the format the output's extension names:
    ///
    /// - `.h5`/`.hdf5`: `/labels` UInt8 (UInt16 above 256 classes) [slices, H, W] with the geometry contract's
    ///   `spacing` (z, y, x), `origin`, `direction` and `geometry_version` 2; optionally `/probabilities` Float32
    ///   [slices, K, H, W];
    /// - `.nii`/`.nii.gz`: a NIfTI-1 label map (uint8, uint16 when a label exceeds 255) with the input's geometry
    ///   in its sform and qform;
    /// - `.png`: a one-slice label map;
    /// - `.dcm`: a binary DICOM SEG referencing the source series (DICOM input only, see `SegmentationExport`).
    ///
    /// An input without geometry (PNG, HDF5 without `geometry_version`) is written with its spacing, origin 0
    /// and identity direction. An overlay PNG of the first slice is written when asked.
    ///
    /// Streams into HDF5: one slice (and its 2N neighbours) is read, segmented and written before the next, so
    /// memory holds a few slices and one slice's logits whatever the number of slices. NIfTI and SEG outputs
    /// hold the label volume (4 bytes a voxel) until written. A post-processing step other than `none` works on
    /// the whole input as one volume, so then memory holds every slice's probabilities. Every output is written
    /// atomically: nothing appears on failure.
    ///
    /// With `batch` > 1, `batch` slices go through the network in one forward pass; memory then holds that
    /// many slices' inputs and logits.
    ///
    /// - Throws: `InputError`, `DeepLabError`, `ImageFileError`, each naming the file and cause.
    public static func run(_ options: Options, log: (String) -> Void = { _ in }) throws {
        let start = DispatchTime.now().uptimeNanoseconds
        let format = try checkOutput(options)
        if let threads = options.threads { setComputeThreads(threads) }
        var segmenter = try VolumeSegmenter.load(
            checkpoints: [options.model] + options.ensemble, context: options.context,
            tileSize: options.tileSize, tileStep: options.tileStep, limits: options.limits,
            precision: options.precision)
        for member in segmenter.members { member.resetMultiplyAddCount() }
        for note in segmenter.augment(options.augmentation ?? segmenter.defaultAugmentation) {
            log("segment: " + note)
        }
        try DeepLabV3.profilingLayers(options.timings) {
            try segment(options, format: format, segmenter: segmenter, log: log)
        }
        if options.timings { reportTimings(segmenter, options: options, start: start, log: log) }
    }

    /// Segments the input and writes every output asked for.
    private static func segment(
        _ options: Options, format: OutputFormat, segmenter: VolumeSegmenter, log: (String) -> Void
    ) throws {
        if format == .dicom {
            try writeSegmentation(options, segmenter: segmenter, log: log)
        } else {
            let reader = try openFrames(options, format: format, segmenter: segmenter, log: log)
            let slices = SliceLabels(reader: reader, segmenter: segmenter, options: options)
            let firstLabels = try write(slices, format: format, options: options, log: log)
            if let path = options.uncertainty, let maps = slices.uncertainty {
                try maps.write(
                    to: path, frames: reader.frames, rows: reader.rows, columns: reader.columns,
                    geometry: slices.geometry)
                log("segment: wrote uncertainty \(path)")
            }
            if let overlay = options.overlay, let firstLabels {
                let reader = slices.reader
                try Overlay.write(
                    image: try reader.frame(0),
                    labels: LabelMap(
                        frames: 1, rows: reader.rows, columns: reader.columns, labels: firstLabels,
                        spacing: reader.spacing),
                    frame: 0, palette: options.palette, to: overlay)
            }
        }
    }

    /// The timings report (`--timings`) of a run that started at `start`.
    private static func reportTimings(
        _ segmenter: VolumeSegmenter, options: Options, start: UInt64, log: (String) -> Void
    ) {
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        var report = throughput(segmenter, batch: options.batch, seconds: seconds)
        report.addRoofline(segmenter.members)
        for line in report.lines { log("segment: " + line) }
        if segmenter.passesPerSlice > 1 { log("segment: " + segmenter.passesDescription) }
    }

    // MARK: - Stages

    /// The output's format (from its ending, `OutputFormat`), refused when it cannot hold what was asked.
    static func checkOutput(_ options: Options) throws -> OutputFormat {
        guard let format = OutputFormat(path: options.output) else {
            throw InputError.unsupportedOutput(
                file: options.output, reason: "expected .h5, .nii, .nii.gz, .seg.nrrd, .png or .dcm")
        }
        if options.probabilities && format != .hdf5 {
            throw InputError.unsupportedOutput(file: options.output, reason: "--probabilities needs an .h5 output")
        }
        if let path = options.uncertainty, ![.hdf5, .nifti].contains(OutputFormat(path: path)) {
            throw InputError.unsupportedOutput(file: path, reason: "--uncertainty writes .h5, .nii or .nii.gz")
        }
        return format
    }

    /// The input's frames, with what was skipped and resampled reported; a PNG output takes one frame.
    static func openFrames(
        _ options: Options, format: OutputFormat, segmenter: VolumeSegmenter, log: (String) -> Void
    ) throws -> FrameReader {
        let reader = try FrameReader.open(options.input, limits: options.limits)
        for (file, reason) in reader.skipped { log("segment: skipped \(file): \(reason)") }
        if !reader.skipped.isEmpty {
            log("segment: \(reader.frames) slice(s) segmented, \(reader.skipped.count) file(s) skipped")
        }
        if format == .png && reader.frames > 1 {
            throw InputError.unsupportedOutput(
                file: options.output,
                reason: "the input has \(reader.frames) frames; a PNG holds one, write .h5 or .nii.gz instead")
        }
        let spacing: [Double]? = reader.hasSpacing ? reader.spacing : nil
        if let size = segmenter.resampledSize(rows: reader.rows, columns: reader.columns, spacing: spacing) {
            log(
                "segment: slices resampled from \(reader.rows)×\(reader.columns) to \(size.rows)×\(size.columns) "
                    + "for the model's training spacing \(segmenter.sampling.spacing ?? [])")
        }
        return reader
    }

    /// Writes the labels (and probabilities) in `format`; returns the first frame's labels, for the overlay.
    static func write(
        _ slices: SliceLabels, format: OutputFormat, options: Options, log: (String) -> Void
    ) throws -> [Int32]? {
        let reader = slices.reader
        var firstLabels: [Int32]?
        /// Every frame's labels in one array of `T`, each clamped into it; the first frame's kept for the overlay.
        func gathered<T: FixedWidthInteger>(_: T.Type) throws -> [T] {
            var all: [T] = []
            all.reserveCapacity(reader.frames * reader.rows * reader.columns)
            try slices.produce(log: log) { index, labels, _ in
                if index == 0 { firstLabels = labels }
                all += labels.lazy.map { T(clamping: $0) }
            }
            return all
        }
        switch format {
        case .png:
            try slices.produce(log: log) { _, labels, _ in firstLabels = labels }
            try LabelMap(
                frames: 1, rows: reader.rows, columns: reader.columns, labels: firstLabels ?? [],
                spacing: reader.spacing
            ).write(to: options.output)
        case .nifti:
            // The volume's labels in the type the file takes (uint8 up to 256 classes), not 4 bytes a voxel: with
            // tiles, a 468 × 576 × 100 volume peaked at 240 MB resident with Int32s (Benchmarks/README.md).
            try NIfTIImage.write(
                slices.segmenter.classCount <= 256
                    ? .uint8Labels(gathered(UInt8.self)) : .uint16Labels(gathered(UInt16.self)),
                dimensions: [reader.columns, reader.rows, reader.frames], geometry: slices.geometry,
                to: options.output)
        case .nrrd:
            let all = try gathered(Int32.self)
            let names = try SegmentationExport.classNames(
                checkpoint: options.model, classCount: slices.segmenter.classCount)
            try NRRDFormat.writeSegmentation(
                LabelMap(
                    frames: reader.frames, rows: reader.rows, columns: reader.columns, labels: all,
                    spacing: slices.geometry.spacing),
                geometry: slices.geometry, classNames: names, to: options.output)
        default:
            firstLabels = try writeHDF5(slices, options: options, log: log)
        }
        return firstLabels
    }

    /// `/labels` (uint8, or uint16 above 256 classes) with the geometry and post-processing attributes, and
    /// `/probabilities` when asked, written slice by slice as they come.
    static func writeHDF5(_ slices: SliceLabels, options: Options, log: (String) -> Void) throws -> [Int32]? {
        let (reader, k, geometry) = (slices.reader, slices.segmenter.classCount, slices.geometry)
        let (rows, columns) = (reader.rows, reader.columns)
        var firstLabels: [Int32]?
        let type: HDF5ElementType = k <= 256 ? .uint8 : .uint16
        try HDF5File.write(to: options.output, updating: false) { file in
            try file.createDataset(
                "/labels", type, shape: [reader.frames, rows, columns], chunks: [1, rows, columns], deflate: 4)
            try file.setAttribute("spacing", .doubles(geometry.spacing), at: "/labels")
            try file.setAttribute("origin", .doubles(geometry.origin), at: "/labels")
            try file.setAttribute("direction", .doubles(geometry.direction), at: "/labels")
            try file.setAttribute("geometry_version", .ints([2]), at: "/labels")
            try file.setAttribute("regularize", .string(options.postProcessing.summary), at: "/labels")
            if options.postProcessing.pipeline.contains(.crf) {
                try file.setAttribute("crf", .string(options.postProcessing.crf.spec), at: "/labels")
            }
            if options.probabilities {
                try file.createDataset(
                    "/probabilities", .float32, shape: [reader.frames, k, rows, columns],
                    chunks: [1, 1, rows, columns], deflate: 4)
            }
            try slices.produce(log: log) { index, labels, probabilities in
                if index == 0 { firstLabels = labels }
                let (start, count) = ([index, 0, 0], [1, rows, columns])
                if type == .uint8 {
                    try file.write(labels.map { UInt8(clamping: $0) }, to: "/labels", start: start, count: count)
                } else {
                    try file.write(labels.map { UInt16(clamping: $0) }, to: "/labels", start: start, count: count)
                }
                if options.probabilities {
                    try file.write(
                        probabilities, to: "/probabilities", start: [index, 0, 0, 0], count: [1, k, rows, columns])
                }
            }
        }
        return firstLabels
    }

    /// A frame reader's slices through the model, handed out in slice order: streamed one by one, or, with
    /// post-processing (which takes the whole input as one volume), all at once after the pipeline ran.
    struct SliceLabels {
        let reader: FrameReader
        let segmenter: VolumeSegmenter
        let options: Options
        /// Filled as slices are produced when `--uncertainty` asks for the maps.
        let uncertainty: UncertaintyMaps?

        init(reader: FrameReader, segmenter: VolumeSegmenter, options: Options) {
            (self.reader, self.segmenter, self.options) = (reader, segmenter, options)
            uncertainty = options.uncertainty == nil ? nil : UncertaintyMaps()
        }

        /// The input's geometry, else its spacing with origin 0 and identity axes.
        var geometry: VolumeGeometry {
            reader.geometry
                ?? VolumeGeometry(
                    spacing: reader.spacing, origin: [0, 0, 0], direction: VolumeGeometry.identity.direction)
        }

        /// Hands every slice's labels (and probabilities when asked) to `store`, in slice order.
        func produce(log: (String) -> Void, _ store: (Int, [Int32], [Float]) throws -> Void) throws {
            if !options.postProcessing.isNone {
                try producePostProcessed(log: log, store)
                return
            }
            try segmenter.runOutputs(
                slices: reader.frames, rows: reader.rows, columns: reader.columns, channels: reader.channels,
                spacing: reader.hasSpacing ? reader.spacing : nil, source: options.input, batch: options.batch,
                slice: { try reader.frame($0).values }
            ) { index, output in
                uncertainty?.add(output)
                let logits = output.logits
                try store(
                    index, argmaxOverClasses(logits), options.probabilities ? softmaxOverClasses(logits).values : [])
                if reader.frames > 1 { log("segment: frame \(index + 1)/\(reader.frames)") }
            }
        }

        private func producePostProcessed(log: (String) -> Void, _ store: (Int, [Int32], [Float]) throws -> Void)
            throws
        {
            let (k, plane) = (segmenter.classCount, reader.rows * reader.columns)
            var (labels, probabilities, display, channels, displayed) = ([Int32](), [Float](), [Float](), 1, 0)
            try segmenter.runOutputs(
                slices: reader.frames, rows: reader.rows, columns: reader.columns, channels: reader.channels,
                spacing: reader.hasSpacing ? reader.spacing : nil, source: options.input, batch: options.batch,
                slice: { index in
                    let image = try reader.frame(index)
                    // Slices come in order, once more when z-score takes a first pass for the volume's statistics.
                    if index == displayed {
                        let shown = SegmentPostProcessing.display(image)
                        (display, channels, displayed) = (display + shown.values, shown.channels, displayed + 1)
                    }
                    return image.values
                }
            ) { index, output in
                uncertainty?.add(output)
                labels += argmaxOverClasses(output.logits)
                probabilities += softmaxOverClasses(output.logits).values
                if reader.frames > 1 { log("segment: frame \(index + 1)/\(reader.frames)") }
            }
            labels = try options.postProcessing.apply(
                labels: labels, probabilities: probabilities, classCount: k, display: display, channels: channels,
                frames: reader.frames, rows: reader.rows, columns: reader.columns, spacing: reader.spacing)
            log("segment: post-processed with \(options.postProcessing.summary)")
            for index in 0..<reader.frames {
                try store(
                    index, Array(labels[(index * plane)..<((index + 1) * plane)]),
                    options.probabilities ? Array(probabilities[(index * k * plane)..<((index + 1) * k * plane)]) : [])
            }
        }
    }

    /// The run's throughput so far: the segmenter's forward statistics, the model's multiply-adds and the peak
    /// of oneDNN's ISA at the compute threads in use.
    static func throughput(_ segmenter: VolumeSegmenter, batch: Int, seconds: Double) -> SegmentThroughput {
        let statistics = segmenter.statistics
        return SegmentThroughput(
            slices: statistics.slices, batch: batch, forwards: statistics.forwards,
            seconds: seconds, forwardSeconds: statistics.forwardSeconds,
            multiplyAdds: segmenter.members.map(\.multiplyAddCount).reduce(0, +), precision: segmenter.model.precision,
            peak: .current(threads: computeThreads()),
            peakResidentBytes: SegmentThroughput.peakResidentBytes())
    }

    /// `segment … --out SEG.dcm`: a binary DICOM SEG referencing the source series frame by frame
    /// (`SegmentationExport`), written whole, so the image is loaded whole with its series.
    private static func writeSegmentation(
        _ options: Options, segmenter: VolumeSegmenter,
        log: (String) -> Void
    ) throws {
        let uncertainty = options.uncertainty == nil ? nil : UncertaintyMaps()
        let result = try SeriesSegmentation.segment(
            options.input, output: options.output, segmenter: segmenter, postProcessing: options.postProcessing,
            batch: options.batch, limits: options.limits, each: { _, output in uncertainty?.add(output) }, log: log)
        let (image, source, map) = (result.image, result.series, result.labels)
        try SeriesSegmentation.write(
            result, as: options.dicomOutput, checkpoint: options.model, classCount: segmenter.classCount,
            to: options.output)
        log(
            "segment: wrote \(options.dicomOutput == .seg ? "DICOM SEG" : "RT Structure Set") \(options.output) "
                + "referencing series \(source.seriesInstanceUID) (\(source.slices.count) slice(s))")
        if let path = options.uncertainty, let uncertainty {
            try uncertainty.write(
                to: path, frames: image.frames, rows: image.rows, columns: image.columns, geometry: source.geometry)
            log("segment: wrote uncertainty \(path)")
        }
        if let overlay = options.overlay {
            try Overlay.write(image: image, labels: map, frame: 0, palette: options.palette, to: overlay)
        }
    }

    /// The logits [1, K, H, W] of one frame, tiled by `window` when the frame is larger than a tile.
    static func frameLogits(
        model: DeepLabV3, preprocessing: Preprocessing, image: ScanImage, frame: Int,
        window: SlidingWindow = SlidingWindow()
    ) throws -> FloatTensor {
        let input = image.networkInput(
            frame: frame, channels: model.configuration.inputChannels,
            preprocessing: preprocessing)
        return try window.logits(model, input)
    }

    /// The argmax label map of every frame, [frames, H, W] row-major.
    public static func labels(model: DeepLabV3, preprocessing: Preprocessing, image: ScanImage) throws -> [Int32] {
        try (0..<image.frames).flatMap { frame in
            argmaxOverClasses(try frameLogits(model: model, preprocessing: preprocessing, image: image, frame: frame))
        }
    }

    /// The parity entry point: loads a torchvision `state_dict` (safetensors) into `arch` with torchvision's
    /// DeepLabV3 layout, feeds `/image` Float32 [N, C, H, W] from `rawInput` untouched (eval mode) and writes
    /// `/logits` Float32 [N, K, H, W] to `logitsPath`.
    ///
    /// - Returns: notes from the weight import.
    /// - Throws: `DeepLabError`, `InputError`, `ImageFileError`.
    @discardableResult
    public static func parity(
        weights: String, architecture: Architecture, classCount: Int, inputChannels: Int,
        auxiliaryHead: Bool, rawInput: String, logitsPath: String, threads: Int? = nil,
        log: (String) -> Void = { _ in }
    ) throws -> [String] {
        if let threads { setComputeThreads(threads) }
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: architecture, classCount: classCount,
                inputChannels: inputChannels, auxiliaryHead: auxiliaryHead))
        let notes = try model.loadSafetensors(weights)
        let input = try readRawInput(rawInput, channels: inputChannels)
        try writeLogits(try repeatedForward(model, input, log: log), to: logitsPath)
        return notes
    }

    /// The model's logits for `input`; for benchmarks, SLICELAB_PARITY_REPEAT=R repeats the (warm) forward R
    /// times and logs each latency, and with `timings` the repeats' roofline per convolution.
    private static func repeatedForward(
        _ model: DeepLabV3, _ input: FloatTensor, timings: Bool = false,
        log: (String) -> Void
    ) throws -> FloatTensor {
        TensorMemoryPolicy.keepWorkingSet()
        var logits = try model.forward(input, training: false)
        if let text = ProcessInfo.processInfo.environment["SLICELAB_PARITY_REPEAT"], let repeats = Int(text),
            repeats > 0
        {
            var latencies: [Double] = []
            model.resetMultiplyAddCount()
            try DeepLabV3.profilingLayers(timings) {
                for _ in 0..<min(repeats, 1000) {
                    let start = DispatchTime.now().uptimeNanoseconds
                    logits = try model.forward(input, training: false)
                    latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
                }
            }
            log("latencies_ms " + latencies.map { String(format: "%.2f", $0) }.joined(separator: " "))
            if timings {
                var report = SegmentThroughput(
                    slices: latencies.count * input.shape[0], batch: input.shape[0], forwards: latencies.count,
                    seconds: latencies.reduce(0, +) / 1000, forwardSeconds: latencies.reduce(0, +) / 1000,
                    multiplyAdds: model.multiplyAddCount, precision: model.precision,
                    peak: .current(threads: computeThreads()), peakResidentBytes: SegmentThroughput.peakResidentBytes())
                report.addRoofline([model])
                for line in report.lines { log("segment: " + line) }
            }
        }
        return logits
    }

    /// Parity mode on a checkpoint: the logits [N, K, H, W] of `rawInput`'s `/image` [N, C, H, W], fed untouched
    /// (no preprocessing, no tiling), written to `logitsPath`'s `/logits`; what an exported model is compared with.
    ///
    /// - Throws: `DeepLabError.invalidCheckpoint`, `InputError.invalidContent` for an input of the wrong shape.
    public static func rawLogits(
        model path: String, rawInput: String, logitsPath: String, threads: Int? = nil,
        precision: Precision? = nil, timings: Bool = false, log: (String) -> Void = { _ in }
    ) throws {
        if let threads { setComputeThreads(threads) }
        let (model, _) = try DeepLabCheckpoint.load(path)
        try precision?.select(for: model)
        let input = try readRawInput(rawInput, channels: model.configuration.inputChannels)
        try writeLogits(try repeatedForward(model, input, timings: timings, log: log), to: logitsPath)
    }

    /// `/image` Float32 [N, channels, H, W] of an HDF5 file.
    private static func readRawInput(_ path: String, channels: Int) throws -> FloatTensor {
        let file = try HDF5File.open(path)
        guard file.exists("/image") else {
            throw InputError.invalidContent(file: path, reason: "no /image dataset")
        }
        let image = try file.read("/image", as: Float.self)
        guard image.shape.count == 4, image.shape[1] == channels else {
            throw InputError.invalidContent(
                file: path,
                reason: "/image has shape \(image.shape); expected "
                    + "[N, \(channels), H, W]")
        }
        return FloatTensor(shape: image.shape, values: image.values)
    }

    private static func writeLogits(_ logits: FloatTensor, to path: String) throws {
        try HDF5File.write(to: path, updating: false) { out in
            try out.write(logits.values, shape: logits.shape, to: "/logits")
        }
    }
}

/// The uncertainty maps of a segmentation, slice by slice (`--uncertainty`): predictive entropy, and for an ensemble
/// or views mutual information. Held whole until written (8 bytes a voxel).
final class UncertaintyMaps {
    private(set) var entropy: [Float] = []
    private(set) var mutualInformation: [Float]?

    func add(_ output: SliceOutput) {
        let maps = Uncertainty.maps(output)
        entropy += maps.entropy
        if let information = maps.mutualInformation { mutualInformation = (mutualInformation ?? []) + information }
    }

    /// HDF5: `/entropy` and `/mutual_information` float32 [frames, rows, columns] with the labels' geometry
    /// attributes; NIfTI: float32 with the labels' geometry, the mutual information as a second volume along the
    /// fourth axis.
    func write(to path: String, frames: Int, rows: Int, columns: Int, geometry: VolumeGeometry) throws {
        if OutputFormat(path: path) == .nifti {
            let volumes = mutualInformation == nil ? 1 : 2
            try NIfTIImage.write(
                .float32(entropy + (mutualInformation ?? [])),
                dimensions: [columns, rows, frames] + (volumes == 2 ? [2] : []), geometry: geometry, to: path)
            return
        }
        try HDF5File.write(to: path, updating: false) { file in
            for (name, values) in [("/entropy", entropy), ("/mutual_information", mutualInformation)] {
                guard let values else { continue }
                try file.write(values, shape: [frames, rows, columns], to: name)
                try file.setAttribute("spacing", .doubles(geometry.spacing), at: name)
                try file.setAttribute("origin", .doubles(geometry.origin), at: name)
                try file.setAttribute("direction", .doubles(geometry.direction), at: name)
                try file.setAttribute("geometry_version", .ints([2]), at: name)
            }
        }
    }
}
