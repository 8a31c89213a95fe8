import DeepLab
import Foundation
import ImageIO

// Reading one case's files: PNG and HDF5 through ImageIO; DICOM through the DICOM target.

/// Reads an image file as [C, H, W] Float32: a gray PNG gives 1 channel, RGB 3 (alpha dropped); an HDF5 file's
/// `/image` may be [H, W] or [C, H, W]; DICOM as `readDICOMImage` says.
func readCaseImage(_ url: URL, case name: String) throws -> FloatTensor {
    let path = url.path
    switch url.pathExtension.lowercased() {
    case "png":
        let png = try wrapped(name, path) { try PNGImage.read(path) }
        let samples = png.intSamples
        let channels = png.channels >= 3 ? 3 : 1  // alpha dropped
        var values = [Float](repeating: 0, count: channels * png.rows * png.columns)
        for pixel in 0..<(png.rows * png.columns) {
            for c in 0..<channels {
                values[c * png.rows * png.columns + pixel] = Float(samples[pixel * png.channels + c])
            }
        }
        return FloatTensor(shape: [channels, png.rows, png.columns], values: values)
    case "h5":
        let array = try wrapped(name, path) { try HDF5File.open(path).read("/image", as: Float.self) }
        switch array.shape.count {
        case 2: return FloatTensor(shape: [1] + array.shape, values: array.values)
        case 3 where array.shape[0] >= 1 && array.shape[0] <= 4:
            return FloatTensor(shape: array.shape, values: array.values)
        default:
            throw LabeledSetError.unsupported(case: name, file: path,
                                              reason: "/image has shape \(array.shape); expected [H, W] or [C, H, W]")
        }
    default:
        return try readDICOMImage(url, case: name)
    }
}

/// Reads a label map as [H, W]: a 1-channel PNG (8 or 16 bits), or an HDF5 file's integer `/labels` [H, W]
/// (or [1, H, W]); DICOM SEG as `readDICOMLabels` says.
func readCaseLabels(_ url: URL, case name: String) throws -> LabelTensor {
    let path = url.path
    switch url.pathExtension.lowercased() {
    case "png":
        let png = try wrapped(name, path) { try PNGImage.read(path) }
        guard png.channels == 1 else {
            throw LabeledSetError.unsupported(case: name, file: path,
                                              reason: "a label PNG must be 1-channel gray, not \(png.channels) channels")
        }
        return LabelTensor(shape: [png.rows, png.columns], values: png.intSamples.map { Int32($0) })
    case "h5":
        let file = try wrapped(name, path) { try HDF5File.open(path) }
        let type = try wrapped(name, path) { try file.elementType(of: "/labels") }
        guard let type, [.uint8, .uint16, .int32, .int64].contains(type) else {
            throw LabeledSetError.unsupported(case: name, file: path, reason: "/labels must hold integers")
        }
        let array = try wrapped(name, path) { try file.read("/labels", as: Int64.self) }
        let shape = array.shape.count == 3 && array.shape[0] == 1 ? Array(array.shape.dropFirst()) : array.shape
        guard shape.count == 2 else {
            throw LabeledSetError.unsupported(case: name, file: path,
                                              reason: "/labels has shape \(array.shape); expected [H, W]")
        }
        if let bad = array.values.first(where: { $0 < 0 || $0 > Int64(Int32.max) }) {
            throw LabeledSetError.labelOutOfRange(case: name, value: Int(bad), classCount: 0)
        }
        return LabelTensor(shape: shape, values: array.values.map { Int32($0) })
    default:
        return try readDICOMLabels(url, case: name)
    }
}

/// A DICOM image (`<case>.dcm`) or series folder (`<case>/`) as [1, H, W] modality values.
/// The DICOM target's reader has not landed on this branch yet: this is the one function to fill.
func readDICOMImage(_ url: URL, case name: String) throws -> FloatTensor {
    throw LabeledSetError.unsupported(case: name, file: url.path,
                                      reason: "DICOM images need the DICOM reader (issue #2), not in this build yet")
}

/// A DICOM SEG label file (`<case>.dcm`) as [H, W]; to fill with the DICOM target's SEG reader.
func readDICOMLabels(_ url: URL, case name: String) throws -> LabelTensor {
    throw LabeledSetError.unsupported(case: name, file: url.path,
                                      reason: "DICOM SEG labels need the DICOM reader (issue #2), not in this build yet")
}

/// Runs `body`, turning a reader's error into `LabeledSetError.unreadable` naming the case and file.
private func wrapped<T>(_ name: String, _ path: String, _ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as LabeledSetError { throw error } catch {
        throw LabeledSetError.unreadable(case: name, file: path, reason: "\(error)")
    }
}
