import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabSupport

// Reading one case's files, in the formats of `ImageFormats`, as every command reads them.

/// Reads an image as [F, C, H, W] Float32 (channels first, as the network takes them), with its spacing
/// (slice, row, column) in mm when the file carries one.
func readCaseImage(_ url: URL, case name: String, limits: ReadLimits) throws -> (image: FloatTensor, spacing: [Double]?)
{
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
    return (
        FloatTensor(shape: [frames, channels, scan.rows, scan.columns], values: values),
        scan.hasSpacing ? scan.spacing : nil
    )
}

/// Reads a case's channel files (one or several, each with one or more channels) as one image [F, C, H, W], the
/// channels of the files in order, with the first file's spacing.
///
/// - Throws: `DatasetError.unreadable`, `.shapeMismatch` when the files' grids differ.
func readCaseChannels(
    _ urls: [URL], case name: String,
    limits: ReadLimits
) throws -> (image: FloatTensor, spacing: [Double]?) {
    let first = try readCaseImage(urls[0], case: name, limits: limits)
    guard urls.count > 1 else { return first }
    var parts = [first.image]
    for url in urls.dropFirst() {
        let next = try readCaseImage(url, case: name, limits: limits).image
        let (a, b) = (first.image.shape, next.shape)
        guard [a[0], a[2], a[3]] == [b[0], b[2], b[3]] else {
            throw DatasetError.shapeMismatch(case: name, image: [a[0], a[2], a[3]], labels: [b[0], b[2], b[3]])
        }
        parts.append(next)
    }
    let (frames, plane) = (first.image.shape[0], first.image.shape[2] * first.image.shape[3])
    let channels = parts.map { $0.shape[1] }.reduce(0, +)
    var values = [Float]()
    values.reserveCapacity(frames * channels * plane)
    for f in 0..<frames {
        for part in parts {
            let size = part.shape[1] * plane
            values.append(contentsOf: part.values[(f * size)..<((f + 1) * size)])
        }
    }
    return (
        FloatTensor(shape: [frames, channels, first.image.shape[2], first.image.shape[3]], values: values),
        first.spacing
    )
}

/// The full geometry of a NIfTI file (header only), nil for other formats.
func readCaseGeometry(_ url: URL, case name: String, limits: ReadLimits) throws -> VolumeGeometry? {
    guard (try? ImageFormats.format(of: url.path)) is NIfTIFormat else { return nil }
    return try wrapped(name, url.path) { try NIfTIHeader.read(url.path, limits: limits).geometry }
}

/// Reads a label map as [H, W] or [F, H, W], as `slicelab evaluate` reads it (`LoadedLabels.read`): a
/// 1-channel PNG, an HDF5 file's integer `/labels`, or a DICOM SEG (segment number = class).
func readCaseLabels(
    _ url: URL, case name: String, limits: ReadLimits, options: LabelReadingOptions = LabelReadingOptions()
) throws -> LabelTensor {
    let map = try wrapped(name, url.path) { try LoadedLabels.read(url.path, limits: limits, options: options).labels }
    return LabelTensor(
        shape: map.frames == 1 ? [map.rows, map.columns] : [map.frames, map.rows, map.columns],
        values: map.labels)
}

/// Runs `body`, turning a reader's error into `DatasetError.unreadable` naming the case and file.
private func wrapped<T>(_ name: String, _ path: String, _ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as DatasetError { throw error } catch {
        throw DatasetError.unreadable(case: name, file: path, reason: "\(error)")
    }
}
