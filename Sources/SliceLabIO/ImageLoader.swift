import Foundation
import ImageFiles
import SliceLabSupport

/// Loads the inputs of `segment`, `cluster` and the labeled sets: PNG, HDF5 with `/image`, and DICOM (a file
/// or a series folder).
public enum ImageLoader {
    /// Loads `path` in its format, found from its content (`ImageFormats`): a DICOM file or series folder, PNG,
    /// HDF5 `/image`.
    ///
    /// - PNG: gray (gray+alpha drops alpha) → 1 channel; RGB(A) → 3 channels; sample values as they are.
    /// - HDF5 `/image`: [H, W] or [frames, H, W] → gray; [frames, H, W, 3] or [H, W, 3] → RGB; attribute
    ///   `spacing` (row, column[, slice] or slice, row, column as `slicelab convert` writes) when present.
    /// - `limits` bounds the decoded size (`--max-memory`), checked from headers before allocating.
    /// - Throws: `InputError`, `ImageFileError` (`.tooLarge` naming the limit), or the DICOM reader's errors, each
    ///   naming the file.
    public static func load(_ path: String, limits: ReadLimits = .standard) throws -> ScanImage {
        try ImageFormats.format(of: path).readImage(path, limits: limits)
    }

    static func loadPNG(_ path: String, limits: ReadLimits) throws -> ScanImage {
        let png = try PNGImage.read(path, limits: limits)
        let samples = png.intSamples
        let keep = png.channels >= 3 ? 3 : 1
        var values = [Float](repeating: 0, count: png.rows * png.columns * keep)
        for pixel in 0..<(png.rows * png.columns) {
            for channel in 0..<keep {
                values[pixel * keep + channel] = Float(samples[pixel * png.channels + channel])
            }
        }
        return ScanImage(frames: 1, rows: png.rows, columns: png.columns, channels: keep, values: values, source: path)
    }

    static func loadHDF5(_ path: String, limits: ReadLimits) throws -> ScanImage {
        let file = try HDF5File.open(path)
        let layout = try hdf5Layout(file)
        let values = try file.read("/image", as: Float.self, limits: limits).values
        return ScanImage(
            frames: layout.frames, rows: layout.rows, columns: layout.columns, channels: layout.channels,
            values: values, spacing: layout.spacing, source: path, modality: layout.modality,
            hasSpacing: layout.hasSpacing)
    }

    /// How an HDF5 file's `/image` is laid out, and what its attributes say.
    struct HDF5Layout {
        var frames, rows, columns, channels: Int
        var spacing: [Double]
        var hasSpacing: Bool
        var modality: String?
    }

    /// The layout of `/image`: [H, W] or [frames, H, W] gray, [H, W, 3] or [frames, H, W, 3|1]; its spacing
    /// attribute (row, column[, slice] as `slicelab convert` writes it) and modality.
    ///
    /// - Throws: `InputError.invalidContent` naming the file for another shape or an empty image.
    static func hdf5Layout(_ file: HDF5File) throws -> HDF5Layout {
        let path = file.path
        let shape = try file.shape(of: "/image")
        let (frames, rows, columns, channels): (Int, Int, Int, Int)
        switch shape.count {
        case 2: (frames, rows, columns, channels) = (1, shape[0], shape[1], 1)
        case 3 where shape[2] == 3 && shape[0] > 3: (frames, rows, columns, channels) = (1, shape[0], shape[1], 3)
        case 3: (frames, rows, columns, channels) = (shape[0], shape[1], shape[2], 1)
        case 4 where shape[3] == 3 || shape[3] == 1:
            (frames, rows, columns, channels) = (shape[0], shape[1], shape[2], shape[3])
        default:
            throw InputError.invalidContent(
                file: path,
                reason: "/image has shape \(shape); expected [H, W], "
                    + "[frames, H, W] or [frames, H, W, 3]")
        }
        guard rows > 0, columns > 0, frames > 0 else {
            throw InputError.invalidContent(file: path, reason: "/image is empty (shape \(shape))")
        }
        var spacing: [Double] = [1, 1, 1]
        var hasSpacing = false
        if file.hasAttribute("spacing", at: "/image"),
            let given = try file.attribute("spacing", at: "/image").doubleValues
        {
            // Geometry version 2 (the contract, NIfTI conversions so far) is (z, y, x); files without it hold
            // (row, column[, slice]), as `slicelab convert` writes DICOM.
            let version =
                file.hasAttribute("geometry_version", at: "/image")
                ? try file.attribute("geometry_version", at: "/image").doubleValues?.first : nil
            if given.count == 2 {
                spacing = [1, given[0], given[1]]
            } else if given.count == 3 {
                spacing = version == 2 ? given : [given[2], given[0], given[1]]
            }
            hasSpacing = given.count >= 2 && given.allSatisfy { $0 > 0 && $0.isFinite }
            if !hasSpacing { spacing = [1, 1, 1] }
        }
        let modality =
            file.hasAttribute("modality", at: "/image")
            ? try file.attribute("modality", at: "/image").stringValue : nil
        return HDF5Layout(
            frames: frames, rows: rows, columns: columns, channels: channels, spacing: spacing,
            hasSpacing: hasSpacing, modality: modality)
    }
}
