import Foundation
import ImageFiles
import SliceLabSupport

/// A format SliceLab reads images and label maps from: how a file of it is recognised by its first bytes, and
/// how it is read. Every command and the labeled-set reader find a file's format through `ImageFormats`; a new
/// format is one file conforming to this protocol plus its entry in `ImageFormats.all`.
public protocol ImageFormat: Sendable {
    /// The format for people, as the list of formats in an error shows it: "PNG", "HDF5 (/image or /labels)".
    var name: String { get }
    /// The file-name endings of the format, lower case and without the dot ("h5", "hdf5"; "nii.gz"): what is
    /// stripped from a file's name to give its case name, and what an output path ends with to be written so.
    var fileExtensions: [String] { get }
    /// Whether a file that starts with `head` (its first `ImageFormats.headLength` bytes, or all of a shorter
    /// file) is of this format.
    func recognizes(_ head: [UInt8]) -> Bool
    /// The image: [frames, rows, columns, channels] values with spacing and source.
    func readImage(_ path: String, limits: ReadLimits) throws -> ScanImage
    /// The image frame by frame, for commands that stream (`segment`).
    func frames(_ path: String, limits: ReadLimits) throws -> FrameReader
    /// A label map, and whether its spacing came from the file; `options` say how named structures become classes
    /// and on which series' grid a structure set lies.
    func readLabels(_ path: String, limits: ReadLimits, options: LabelReadingOptions) throws -> LoadedLabels
}

extension ImageFormat {
    /// A label map with the default options (structures in file order, the referenced series found beside it).
    public func readLabels(_ path: String, limits: ReadLimits) throws -> LoadedLabels {
        try readLabels(path, limits: limits, options: LabelReadingOptions())
    }
}

/// The formats SliceLab reads, and how a file's format is found: by its content, never by its name.
public enum ImageFormats {
    /// Every format, in the order they are tried.
    static let all: [any ImageFormat] = [
        RTStructureSetFormat(), DICOMFormat(), PNGFormat(), HDF5Format(), NIfTIFormat(), NRRDFormat()
    ]

    /// How many leading bytes a format may look at (HDF5's signature may sit at 0, 512, 1024 or 2048).
    static let headLength = 2056

    /// The format of the file or folder at `path`: a folder is a DICOM series folder; a file is recognised by
    /// its first bytes.
    ///
    /// - Throws: `InputError.unsupportedFile` naming the file, for a missing path or a file of no format SliceLab
    ///   reads (listing those formats).
    public static func format(of path: String) throws -> any ImageFormat {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw InputError.unsupportedFile(file: path, reason: "no such file or folder")
        }
        if isDirectory.boolValue { return DICOMFormat() }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw InputError.unsupportedFile(file: path, reason: "cannot open it for reading")
        }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: headLength)) ?? Data())
        guard let format = all.first(where: { $0.recognizes(head) }) else {
            throw InputError.unsupportedFile(
                file: path,
                reason: "not a format SliceLab reads (it reads "
                    + all.map(\.name).joined(separator: ", ") + ")")
        }
        return format
    }

    /// Whether `path` is a file or folder of a format SliceLab reads (a folder counts as DICOM).
    public static func recognizes(_ path: String) -> Bool { (try? format(of: path)) != nil }

    /// The longest format extension `name` ends with (with its dot), if any.
    public static func knownEnding(_ name: String) -> String? {
        let lowered = name.lowercased()
        return all.flatMap(\.fileExtensions).map { "." + $0 }.sorted { $0.count > $1.count }
            .first { lowered.hasSuffix($0) && lowered.count > $0.count }
    }

    /// The case name of a file: its name without the longest format extension it ends with, else without its
    /// last extension ("case01.nii.gz" → "case01", "IM0001" → "IM0001").
    public static func stem(_ name: String) -> String {
        if let ending = knownEnding(name) { return String(name.dropLast(ending.count)) }
        return (name as NSString).deletingPathExtension
    }

    /// Whether a file in a folder of inputs is one: named as a format is (then a file that is not of it gets
    /// its error when read, not silently left out), or of a format by its content (an extension-less DICOM file).
    public static func isInput(_ url: URL) -> Bool {
        knownEnding(url.lastPathComponent) != nil || recognizes(url.path)
    }

    /// The input files of a folder by case name (hidden files and sub-folders left out).
    public static func files(in folder: URL) throws -> [(stem: String, url: URL)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        var result: [(stem: String, url: URL)] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            let url = folder.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                isInput(url)
            else { continue }
            result.append((stem(name), url))
        }
        return result
    }
}
