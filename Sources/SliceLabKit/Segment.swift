import DICOM
import DeepLab
import Foundation
import ImageFiles
import SliceLabSupport

/// `slicelab segment`: a DeepLabV3 checkpoint applied to an image or series, and the torchvision parity entry
/// point (raw tensors in, logits out).
public enum Segment {
    /// Options of a segmentation run.
    public struct Options: Sendable {
        public var input: String
        public var model: String
        public var output: String
        public var overlay: String?
        public var probabilities: Bool
        public var threads: Int?
        public var tileSize: Int
        /// The bound on decoded sizes the input is read with (`--max-memory`); it applies to each frame.
        public var limits: ReadLimits
        /// The step applied to the model's output (`--regularize`, `--crf`); `/probabilities` keeps the
        /// model's output before it.
        public var postProcessing = SegmentPostProcessing()

        public init(input: String, model: String, output: String, overlay: String? = nil, probabilities: Bool = false,
                    threads: Int? = nil, tileSize: Int = 512, limits: ReadLimits = .standard) {
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

    /// Segments every frame of the input with the checkpoint's model and preprocessing; writes the label map
    /// (`/labels` UInt8, or UInt16 above 256 classes, [frames, H, W], a one-frame PNG, or for `.dcm` and a DICOM
    /// input a binary DICOM SEG referencing the source series, see `SegmentationExport`), optionally
    /// `/probabilities` Float32 [frames, K, H, W] and an overlay PNG of the first frame.
    ///
    /// Streams: one frame is read, segmented and written into the output before the next is read, so memory
    /// holds one frame and its logits whatever the number of frames. The HDF5 output is a temporary file
    /// renamed into place when every frame is in it. A post-processing step other than `none` works on the
    /// whole input (a multi-frame input as one volume), so then memory holds every frame's probabilities.
    ///
    /// - Throws: `InputError`, `DeepLabError`, `ImageFileError`, each naming the file and cause.
    public static func run(_ options: Options, log: (String) -> Void = { _ in }) throws {
        let ext = URL(fileURLWithPath: options.output).pathExtension.lowercased()
        guard ["h5", "hdf5", "png", "dcm"].contains(ext) else {
            throw InputError.unsupportedOutput(file: options.output, reason: "expected .h5, .png or .dcm")
        }
        if options.probabilities && ext != "h5" && ext != "hdf5" {
            throw InputError.unsupportedOutput(file: options.output, reason: "--probabilities needs an .h5 output")
        }
        if let threads = options.threads { setComputeThreads(threads) }
        let (model, preprocessing) = try DeepLabCheckpoint.load(options.model)
        if ext == "dcm" { return try writeSegmentation(options, model: model, preprocessing: preprocessing, log: log) }
        let reader = try FrameReader.open(options.input, limits: options.limits)
        for (file, reason) in reader.skipped { log("segment: skipped \(file): \(reason)") }
        if !reader.skipped.isEmpty {
            log("segment: \(reader.frames) slice(s) segmented, \(reader.skipped.count) file(s) skipped")
        }
        if ext == "png" && reader.frames > 1 {
            throw InputError.unsupportedOutput(file: options.output, reason: "the input has \(reader.frames) frames; "
                + "a PNG holds one, write .h5 instead")
        }
        let k = model.configuration.classCount
        let (rows, columns) = (reader.rows, reader.columns)
        let window = SlidingWindow(tileSize: options.tileSize)
        var firstFrame: (image: ScanImage, labels: LabelMap)?
        let processed = options.postProcessing.step == .none ? nil
            : try segmentWhole(reader: reader, model: model, preprocessing: preprocessing, window: window,
                               options: options, log: log)
        let plane = rows * columns
        /// Segments frame `index` and hands its labels (and probabilities when asked) to `store`.
        func segment(_ index: Int, _ store: ([Int32], [Float]) throws -> Void) throws {
            let image: ScanImage?
            let labels: [Int32]
            if let processed {
                image = index == 0 ? processed.first : nil
                labels = Array(processed.labels[(index * plane)..<((index + 1) * plane)])
                try store(labels, options.probabilities
                    ? Array(processed.probabilities[(index * k * plane)..<((index + 1) * k * plane)]) : [])
            } else {
                let frame = try reader.frame(index)
                image = frame
                let logits = try frameLogits(model: model, preprocessing: preprocessing, image: frame, frame: 0,
                                             window: window)
                labels = argmaxOverClasses(logits)
                try store(labels, options.probabilities ? softmaxOverClasses(logits).values : [])
            }
            if index == 0, let image {
                firstFrame = (image, LabelMap(frames: 1, rows: rows, columns: columns, labels: labels,
                                              spacing: reader.spacing))
            }
            if reader.frames > 1 { log("segment: frame \(index + 1)/\(reader.frames)") }
        }
        if ext == "png" {
            try segment(0) { _, _ in }
            try firstFrame?.labels.write(to: options.output)
        } else {
            let type: HDF5ElementType = k <= 256 ? .uint8 : .uint16
            try HDF5File.write(to: options.output, updating: false) { file in
                try file.createDataset("/labels", type, shape: [reader.frames, rows, columns],
                                       chunks: [1, rows, columns], deflate: 4)
                try file.setAttribute("spacing", .doubles(reader.spacing), at: "/labels")
                try file.setAttribute("regularize", .string(options.postProcessing.step.rawValue), at: "/labels")
                if options.postProcessing.step == .crf {
                    try file.setAttribute("crf", .string(options.postProcessing.crf.spec), at: "/labels")
                }
                if options.probabilities {
                    try file.createDataset("/probabilities", .float32, shape: [reader.frames, k, rows, columns],
                                           chunks: [1, 1, rows, columns], deflate: 4)
                }
                for index in 0..<reader.frames {
                    try segment(index) { labels, probabilities in
                        if type == .uint8 {
                            try file.write(labels.map { UInt8(clamping: $0) }, to: "/labels", start: [index, 0, 0],
                                           count: [1, rows, columns])
                        } else {
                            try file.write(labels.map { UInt16(clamping: $0) }, to: "/labels", start: [index, 0, 0],
                                           count: [1, rows, columns])
                        }
                        if options.probabilities {
                            try file.write(probabilities, to: "/probabilities", start: [index, 0, 0, 0],
                                           count: [1, k, rows, columns])
                        }
                    }
                }
            }
        }
        if let overlay = options.overlay, let (image, labels) = firstFrame {
            try Overlay.write(image: image, labels: labels, frame: 0, to: overlay)
        }
    }

    /// `segment … --out SEG.dcm`: a binary DICOM SEG referencing the source series frame by frame
    /// (`SegmentationExport`), written whole, so the image is loaded whole with its series.
    private static func writeSegmentation(_ options: Options, model: DeepLabV3, preprocessing: Preprocessing,
                                          log: (String) -> Void) throws {
        guard ImageLoader.isDICOM(options.input) else {
            throw InputError.unsupportedOutput(file: options.output, reason: "a DICOM SEG needs a DICOM file or "
                + "series folder as INPUT, not \(options.input)")
        }
        let (image, source) = try ImageLoader.loadDICOMSeries(options.input, limits: options.limits)
        let window = SlidingWindow(tileSize: options.tileSize)
        var labels: [Int32] = [], probabilities: [Float] = [], display: [Float] = [], channels = 1
        let post = options.postProcessing.step != .none
        for frame in 0..<image.frames {
            let logits = try frameLogits(model: model, preprocessing: preprocessing, image: image, frame: frame,
                                         window: window)
            labels += argmaxOverClasses(logits)
            if post {
                probabilities += softmaxOverClasses(logits).values
                let shown = SegmentPostProcessing.display(image, frame: frame)
                (display, channels) = (display + shown.values, shown.channels)
            }
            if image.frames > 1 { log("segment: frame \(frame + 1)/\(image.frames)") }
        }
        let k = model.configuration.classCount
        if post {
            labels = try options.postProcessing.apply(labels: labels, probabilities: probabilities, classCount: k,
                                                      display: display, channels: channels, frames: image.frames,
                                                      rows: image.rows, columns: image.columns,
                                                      spacing: image.spacing)
        }
        let map = LabelMap(frames: image.frames, rows: image.rows, columns: image.columns, labels: labels,
                           spacing: image.spacing)
        let names = try SegmentationExport.classNames(checkpoint: options.model, classCount: k)
        try SegmentationExport.write(labels: map, series: source, classNames: names, to: options.output)
        log("segment: wrote DICOM SEG \(options.output) referencing series \(source.seriesInstanceUID) "
            + "(\(source.slices.count) slice(s))")
        if let overlay = options.overlay { try Overlay.write(image: image, labels: map, frame: 0, to: overlay) }
    }

    /// Every frame's probabilities (class-major per frame, the model's output) and the post-processed labels,
    /// with the first frame's image for the overlay.
    private static func segmentWhole(reader: FrameReader, model: DeepLabV3, preprocessing: Preprocessing,
                                     window: SlidingWindow, options: Options, log: (String) -> Void) throws
        -> (labels: [Int32], probabilities: [Float], first: ScanImage) {
        var labels: [Int32] = [], probabilities: [Float] = [], display: [Float] = [], channels = 1
        var first: ScanImage?
        for index in 0..<reader.frames {
            let image = try reader.frame(index)
            if index == 0 { first = image }
            let logits = try frameLogits(model: model, preprocessing: preprocessing, image: image, frame: 0,
                                         window: window)
            labels += argmaxOverClasses(logits)
            probabilities += softmaxOverClasses(logits).values
            let shown = SegmentPostProcessing.display(image)
            display += shown.values
            channels = shown.channels
        }
        let processed = try options.postProcessing.apply(
            labels: labels, probabilities: probabilities, classCount: model.configuration.classCount,
            display: display, channels: channels, frames: reader.frames, rows: reader.rows,
            columns: reader.columns, spacing: reader.spacing)
        log("segment: post-processed with \(options.postProcessing.step)")
        guard let first else { throw InputError.invalidContent(file: options.input, reason: "no frames") }
        return (processed, probabilities, first)
    }

    /// The logits [1, K, H, W] of one frame, tiled by `window` when the frame is larger than a tile.
    static func frameLogits(model: DeepLabV3, preprocessing: Preprocessing, image: ScanImage, frame: Int,
                            window: SlidingWindow = SlidingWindow()) throws -> FloatTensor {
        let input = networkInput(image, frame: frame, channels: model.configuration.inputChannels,
                                 preprocessing: preprocessing)
        return try window.logits(model, input)
    }

    /// The argmax label map of every frame, [frames, H, W] row-major.
    public static func labels(model: DeepLabV3, preprocessing: Preprocessing, image: ScanImage) throws -> [Int32] {
        try (0..<image.frames).flatMap { frame in
            argmaxOverClasses(try frameLogits(model: model, preprocessing: preprocessing, image: image, frame: frame))
        }
    }

    /// One frame as the network's input [1, C, H, W]: channels matched (RGB averaged to gray, gray repeated to
    /// RGB), then the checkpoint's preprocessing.
    static func networkInput(_ image: ScanImage, frame: Int, channels: Int, preprocessing: Preprocessing) -> FloatTensor {
        let plane = image.rows * image.columns
        var values: [Float]
        if channels == 1 {
            values = image.intensity(frame: frame)
        } else {
            let pixels = Array(image.frame(frame))
            values = [Float](repeating: 0, count: 3 * plane)
            for p in 0..<plane {
                for ch in 0..<3 { values[ch * plane + p] = pixels[p * image.channels + (image.channels == 1 ? 0 : ch)] }
            }
        }
        preprocessing.apply(to: &values)
        return FloatTensor(shape: [1, channels, image.rows, image.columns], values: values)
    }

    /// The parity entry point: loads a torchvision `state_dict` (safetensors) into `arch` with torchvision's
    /// DeepLabV3 layout, feeds `/image` Float32 [N, C, H, W] from `rawInput` untouched (eval mode) and writes
    /// `/logits` Float32 [N, K, H, W] to `logitsPath`.
    ///
    /// - Returns: notes from the weight import.
    /// - Throws: `DeepLabError`, `InputError`, `ImageFileError`.
    @discardableResult
    public static func parity(weights: String, architecture: Architecture, classCount: Int, inputChannels: Int,
                              auxiliaryHead: Bool, rawInput: String, logitsPath: String, threads: Int? = nil,
                              log: (String) -> Void = { _ in }) throws -> [String] {
        if let threads { setComputeThreads(threads) }
        let model = try DeepLabV3(DeepLabConfiguration(architecture: architecture, classCount: classCount,
                                                       inputChannels: inputChannels, auxiliaryHead: auxiliaryHead))
        let notes = try model.loadSafetensors(weights)
        let input = try readRawInput(rawInput, channels: inputChannels)
        try writeLogits(try repeatedForward(model, input, log: log), to: logitsPath)
        return notes
    }

    /// The model's logits for `input`; for benchmarks, SLICELAB_PARITY_REPEAT=R repeats the (warm) forward R
    /// times and logs each latency.
    private static func repeatedForward(_ model: DeepLabV3, _ input: FloatTensor,
                                        log: (String) -> Void) throws -> FloatTensor {
        var logits = try model.forward(input, training: false)
        if let text = ProcessInfo.processInfo.environment["SLICELAB_PARITY_REPEAT"], let repeats = Int(text), repeats > 0 {
            var latencies: [Double] = []
            for _ in 0..<min(repeats, 1000) {
                let start = DispatchTime.now().uptimeNanoseconds
                logits = try model.forward(input, training: false)
                latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            }
            log("latencies_ms " + latencies.map { String(format: "%.2f", $0) }.joined(separator: " "))
        }
        return logits
    }

    /// Parity mode on a checkpoint: the logits [N, K, H, W] of `rawInput`'s `/image` [N, C, H, W], fed untouched
    /// (no preprocessing, no tiling), written to `logitsPath`'s `/logits`; what an exported model is compared with.
    ///
    /// - Throws: `DeepLabError.invalidCheckpoint`, `InputError.invalidContent` for an input of the wrong shape.
    public static func rawLogits(model path: String, rawInput: String, logitsPath: String,
                                 threads: Int? = nil, log: (String) -> Void = { _ in }) throws {
        if let threads { setComputeThreads(threads) }
        let (model, _) = try DeepLabCheckpoint.load(path)
        let input = try readRawInput(rawInput, channels: model.configuration.inputChannels)
        try writeLogits(try repeatedForward(model, input, log: log), to: logitsPath)
    }

    /// `/image` Float32 [N, channels, H, W] of an HDF5 file.
    private static func readRawInput(_ path: String, channels: Int) throws -> FloatTensor {
        let file = try HDF5File.open(path)
        guard file.exists("/image") else {
            throw InputError.invalidContent(file: path, reason: "no /image dataset")
        }
        let image = try file.read("/image", as: Float.self)
        guard image.shape.count == 4, image.shape[1] == channels else {
            throw InputError.invalidContent(file: path, reason: "/image has shape \(image.shape); expected "
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
