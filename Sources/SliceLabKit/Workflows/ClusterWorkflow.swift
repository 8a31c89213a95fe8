import Classical
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabInference
import SliceLabSupport

/// `slicelab cluster`: the classical baseline from an image file to a label map (issue #6).
public enum ClusterWorkflow {
    /// Loads `input`, clusters it, and writes `out` (and `overlay` if given).
    /// - Throws: `InferenceError` for impossible option combinations; `InputError` naming the file for data the
    ///   method cannot split (constant images, too few values, NaN/inf); the loader's and writer's errors.
    @discardableResult
    public static func run(
        input: String, options: ClusterOptions, out: String,
        overlay: String? = nil, palette: Overlay.Palette = .distinct, limits: ReadLimits = .standard
    ) throws -> ClusterOutcome {
        try checkOutput(out)
        let start = Date()
        let image = try ImageLoader.load(input, limits: limits)
        if image.frames > 1, OutputFormat(path: out) == .png {
            throw InputError.unsupportedOutput(
                file: out,
                reason: "a PNG holds one slice and \(input) has "
                    + "\(image.frames); write .h5 instead")
        }
        var outcome = try ClassicalSegmentation.cluster(image, options: options)
        outcome.timings.insert(
            ("load", Date().timeIntervalSince(start) - outcome.timings.reduce(0) { $0 + $1.seconds }),
            at: 0)
        let writeStart = Date()
        try write(outcome, options: options, to: out)
        if let overlay {
            let frame = image.frames / 2
            let map = LabelMap(frames: image.frames, rows: image.rows, columns: image.columns, labels: outcome.labels)
            try Overlay.write(image: image, labels: map, frame: frame, palette: palette, to: overlay)
        }
        outcome.timings.append(("write", Date().timeIntervalSince(writeStart)))
        return outcome
    }

    static func checkOutput(_ out: String) throws {
        guard let format = OutputFormat(path: out), [.hdf5, .png].contains(format) else {
            throw InputError.unsupportedOutput(file: out, reason: "expected .h5 or .png")
        }
        try prepareOutputLocation(out)
    }

    // MARK: - Output

    /// Writes the outcome: `.h5` with `/labels`, `/regions` (Int32, [H, W] or [slices, H, W]), `/centers`
    /// (Float64 [K, D]) or `/thresholds` (Float64 [K−1]) and root attributes; `.png` with the class map of a
    /// single image. Atomic: an earlier file at `path` survives any failure.
    public static func write(_ outcome: ClusterOutcome, options: ClusterOptions, to path: String) throws {
        try checkOutput(path)
        let dims = outcome.shape.dimensions
        if OutputFormat(path: path) == .png {
            guard !outcome.shape.isVolume else {
                throw InputError.unsupportedOutput(
                    file: path,
                    reason: "a PNG holds one slice and this label map has "
                        + "\(outcome.shape.slices); write .h5 instead")
            }
            try LabelMap(frames: 1, rows: outcome.shape.rows, columns: outcome.shape.columns, labels: outcome.labels)
                .write(to: path)
            return
        }
        try HDF5File.write(to: path, updating: false) { file in
            let chunks = outcome.shape.isVolume ? [1, outcome.shape.rows, outcome.shape.columns] : dims
            try file.write(outcome.labels, shape: dims, to: "/labels", chunks: chunks, deflate: 4)
            try file.write(outcome.regions, shape: dims, to: "/regions", chunks: chunks, deflate: 4)
            if let centers = outcome.centers {
                try file.write(centers.values, shape: [centers.count, centers.dimension], to: "/centers")
            }
            if let thresholds = outcome.thresholds {
                try file.write(thresholds, shape: [thresholds.count], to: "/thresholds")
            }
            try file.setAttribute("method", .string(options.method.rawValue))
            try file.setAttribute("space", .string(options.space.rawValue))
            try file.setAttribute("classes", .int(Int64(options.classes)))
            try file.setAttribute("seed", .int(Int64(options.seed)))
            try file.setAttribute("iterations", .int(Int64(outcome.iterations)))
            if let inertia = outcome.inertia { try file.setAttribute("inertia", .double(inertia)) }
            try file.setAttribute("regularize", .string("\(options.regularize)"))
            if options.regularize.contains(.mrf) { try file.setAttribute("beta", .double(options.beta)) }
            try file.setAttribute("min_region", .int(Int64(options.minRegion)))
            try file.setAttribute("connectivity", .int(Int64(options.connectivity)))
            try file.setAttribute(
                "neighbourhood",
                .int(
                    Int64(
                        options.connectivity == 1
                            ? (outcome.shape.isVolume ? 6 : 4) : (outcome.shape.isVolume ? 26 : 8))))
            try file.setAttribute("region_count", .int(Int64(outcome.regionCount)))
            try file.setAttribute("class_order", .string(ClassMapping.Method.intensityOrder.rawValue))
            try file.setAttribute("slicelab_version", .string(sliceLabVersion))
        }
    }
}
