import Foundation
import ImageFiles
import SliceLabSupport

/// A label map read from a file, and whether its spacing came from the file.
public struct LoadedLabels: Sendable {
    public var labels: LabelMap
    public var hasSpacing: Bool

    public init(labels: LabelMap, hasSpacing: Bool) {
        (self.labels, self.hasSpacing) = (labels, hasSpacing)
    }

    /// Reads a label file in its format, found from its content (`ImageFormats`): PNG (one gray channel, 8 or
    /// 16 bits), HDF5 (dataset `/labels` [rows, columns] or [frames, rows, columns], integer, optional attribute
    /// `spacing` (slice, row, column mm) as `LabelMap.write` stores it), DICOM SEG.
    ///
    /// - Throws: `InputError.invalidContent` naming the file (colour PNG, negative or non-integer labels, bad
    ///   shape), `ImageFileError` from the readers.
    public static func read(_ path: String, limits: ReadLimits = .standard) throws -> LoadedLabels {
        try ImageFormats.format(of: path).readLabels(path, limits: limits)
    }
}
