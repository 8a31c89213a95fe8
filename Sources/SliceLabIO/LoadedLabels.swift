import Foundation
import ImageFiles
import SliceLabSupport

/// A label map read from a file, and whether its spacing came from the file.
public struct LoadedLabels: Sendable {
    public var labels: LabelMap
    public var hasSpacing: Bool
    /// Where the voxels lie, when the file says (NIfTI, NRRD, a structure set's series).
    public var geometry: VolumeGeometry?
    /// What the reader decided that the user should know (how structures became classes, what it left out).
    public var notes: [String] = []
    /// The names of the classes a file of named structures gave (a class's first structure), by class.
    public var classNames: [Int: String] = [:]

    public init(labels: LabelMap, hasSpacing: Bool, geometry: VolumeGeometry? = nil, notes: [String] = []) {
        (self.labels, self.hasSpacing, self.geometry, self.notes) = (labels, hasSpacing, geometry, notes)
    }

    /// Reads a label file in its format, found from its content (`ImageFormats`): PNG (one gray channel, 8 or
    /// 16 bits), HDF5 (dataset `/labels` [rows, columns] or [frames, rows, columns], integer, optional attribute
    /// `spacing` (slice, row, column mm) as `LabelMap.write` stores it), DICOM SEG.
    ///
    /// - Throws: `InputError.invalidContent` naming the file (colour PNG, negative or non-integer labels, bad
    ///   shape), `ImageFileError` from the readers.
    public static func read(
        _ path: String, limits: ReadLimits = .standard, options: LabelReadingOptions = LabelReadingOptions()
    ) throws -> LoadedLabels {
        try ImageFormats.format(of: path).readLabels(path, limits: limits, options: options)
    }
}
