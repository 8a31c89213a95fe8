import Foundation
import ImageFiles

/// A label volume: one class index per pixel, [frames, rows, columns] row-major.
public struct LabelMap: Equatable, Sendable {
    public var frames: Int
    public var rows: Int
    public var columns: Int
    public var labels: [Int32]
    /// Voxel spacing in millimetres: (slice, row, column).
    public var spacing: [Double]

    public init(frames: Int, rows: Int, columns: Int, labels: [Int32], spacing: [Double] = [1, 1, 1]) {
        precondition(labels.count == frames * rows * columns, "LabelMap: label count mismatch")
        (self.frames, self.rows, self.columns, self.labels, self.spacing) = (frames, rows, columns, labels, spacing)
    }

    /// [frames, rows, columns].
    public var dimensions: [Int] { [frames, rows, columns] }

    /// Labels of one frame.
    public func frame(_ index: Int) -> ArraySlice<Int32> {
        labels[(index * rows * columns)..<((index + 1) * rows * columns)]
    }

    /// Writes the label map: `.h5` → dataset `/labels` [frames, rows, columns] (chunked, deflate) with attribute
    /// `spacing` (slice, row, column mm), `.png` → one frame as an 8-bit (or 16-bit above 255) gray label PNG.
    ///
    /// - Parameters:
    ///   - elementType: the HDF5 type of `/labels`: `.uint8`, `.uint16` or `.int32` (contracts differ per command).
    ///   - extra: writes more datasets or attributes into the same HDF5 file before it is committed.
    /// - Throws: `InputError.unsupportedOutput` for other extensions or a multi-frame PNG; I/O errors naming the file.
    public func write(
        to path: String, elementType: HDF5ElementType = .uint8,
        extra: (HDF5File) throws -> Void = { _ in }
    ) throws {
        switch OutputFormat(path: path) {
        case .hdf5?:
            try HDF5File.write(to: path, updating: false) { file in
                let shape = [frames, rows, columns]
                let chunks = [1, rows, columns]
                switch elementType {
                case .uint8:
                    try file.write(
                        labels.map { UInt8(clamping: $0) }, shape: shape, to: "/labels",
                        chunks: chunks, deflate: 4)
                case .uint16:
                    try file.write(
                        labels.map { UInt16(clamping: $0) }, shape: shape, to: "/labels",
                        chunks: chunks, deflate: 4)
                default: try file.write(labels, shape: shape, to: "/labels", chunks: chunks, deflate: 4)
                }
                try file.setAttribute("spacing", .doubles(spacing), at: "/labels")
                try extra(file)
            }
        case .png?:
            guard frames == 1 else {
                throw InputError.unsupportedOutput(
                    file: path,
                    reason: "a PNG holds one slice and this label map has "
                        + "\(frames); write .h5 instead")
            }
            let maxLabel = labels.max() ?? 0
            if maxLabel <= 255 {
                try PNGImage(rows: rows, columns: columns, channels: 1, samples: labels.map { UInt8(clamping: $0) })
                    .write(to: path)
            } else {
                try PNGImage(rows: rows, columns: columns, channels: 1, samples: labels.map { UInt16(clamping: $0) })
                    .write(to: path)
            }
        default:
            throw InputError.unsupportedOutput(file: path, reason: "expected .h5 or .png")
        }
    }
}
