import DeepLab
import Foundation
import ImageIO

// Reading one case's files. Images go through the shared `ImageLoader` (PNG, HDF5 `/image`, DICOM file or
// series folder); label maps are read here.

/// Reads an image as [F, C, H, W] Float32 (channels first, as the network takes them), with its spacing
/// (slice, row, column) in mm when the file carries one.
func readCaseImage(_ url: URL, case name: String, limits: ReadLimits) throws -> (image: FloatTensor, spacing: [Double]?) {
    let scan = try wrapped(name, url.path) { try ImageLoader.load(url.path, limits: limits) }
    let (frames, channels, plane) = (scan.frames, scan.channels, scan.rows * scan.columns)
    var values = [Float](repeating: 0, count: scan.values.count)
    for f in 0..<frames {
        for p in 0..<plane {
            for c in 0..<channels {
                values[(f * channels + c) * plane + p] = scan.values[(f * plane + p) * channels + c]
            }
        }
    }
    return (FloatTensor(shape: [frames, channels, scan.rows, scan.columns], values: values),
            scan.hasSpacing ? scan.spacing : nil)
}

/// Reads a label map as [H, W] or [F, H, W]: a 1-channel PNG (8 or 16 bits), an HDF5 file's integer `/labels`,
/// or a DICOM SEG (`readDICOMLabels`).
func readCaseLabels(_ url: URL, case name: String, limits: ReadLimits) throws -> LabelTensor {
    let path = url.path
    switch url.pathExtension.lowercased() {
    case "png":
        let png = try wrapped(name, path) { try PNGImage.read(path, limits: limits) }
        guard png.channels == 1 else {
            throw LabeledSetError.unreadable(case: name, file: path, reason: "a label PNG must have one channel "
                                             + "(gray), not \(png.channels)")
        }
        return LabelTensor(shape: [png.rows, png.columns], values: png.intSamples.map { Int32($0) })
    case "h5":
        let file = try wrapped(name, path) { try HDF5File.open(path) }
        let type = try wrapped(name, path) { try file.elementType(of: "/labels") }
        guard let type, [.uint8, .uint16, .int32, .int64].contains(type) else {
            throw LabeledSetError.unreadable(case: name, file: path, reason: "/labels must be an integer type")
        }
        let array = try wrapped(name, path) { try file.read("/labels", as: Int64.self, limits: limits) }
        guard array.shape.count == 2 || array.shape.count == 3 else {
            throw LabeledSetError.unreadable(case: name, file: path, reason: "/labels has shape \(array.shape); "
                                             + "expected (rows, columns) or (slices, rows, columns)")
        }
        // Values beyond Int32 are out of any class range; clamp them so the range check reports them.
        return LabelTensor(shape: array.shape, values: array.values.map { Int32(clamping: $0) })
    default:
        return try readDICOMLabels(url, case: name, limits: limits)
    }
}

/// A DICOM Segmentation (`<case>.dcm`) as [H, W] or [F, H, W] class indices (segment number = class), read
/// by the DICOM target's SEG reader as `slicelab evaluate` reads it.
func readDICOMLabels(_ url: URL, case name: String, limits: ReadLimits) throws -> LabelTensor {
    let map = try wrapped(name, url.path) { try EvaluateInputs.loadDICOMSegmentation(url.path, limits: limits).labels }
    return LabelTensor(shape: map.frames == 1 ? [map.rows, map.columns] : [map.frames, map.rows, map.columns],
                       values: map.labels)
}

/// Runs `body`, turning a reader's error into `LabeledSetError.unreadable` naming the case and file.
private func wrapped<T>(_ name: String, _ path: String, _ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as LabeledSetError { throw error } catch {
        throw LabeledSetError.unreadable(case: name, file: path, reason: "\(error)")
    }
}
