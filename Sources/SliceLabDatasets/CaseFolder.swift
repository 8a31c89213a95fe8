import Foundation
import SliceLabIO

/// A folder of cases, as `segment FOLDER` reads it: every file of a format SliceLab reads (the case is its name
/// without the ending) and every sub-folder (a DICOM series), sorted by name.
public enum CaseFolder {
    /// The cases of `folder`: (name, path), sorted by name.
    ///
    /// - Throws: `InputError.unsupportedFile` for a folder that cannot be listed or holds no case.
    public static func cases(in folder: String) throws -> [(name: String, path: String)] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder) } catch {
            throw InputError.unsupportedFile(file: folder, reason: "cannot list the folder of cases")
        }
        var found: [(name: String, path: String)] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            let url = URL(fileURLWithPath: folder).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                found.append((name, url.path))
            } else if ImageFormats.isInput(url) {
                found.append((ImageFormats.stem(name), url.path))
            }
        }
        guard !found.isEmpty else {
            throw InputError.unsupportedFile(
                file: folder,
                reason: "no case in the folder (files SliceLab reads, or "
                    + "series sub-folders)")
        }
        if let duplicate = Dictionary(grouping: found, by: \.name).first(where: { $0.value.count > 1 }) {
            throw InputError.unsupportedFile(
                file: folder,
                reason: "two cases named '\(duplicate.key)': "
                    + duplicate.value.map { URL(fileURLWithPath: $0.path).lastPathComponent }.joined(separator: ", "))
        }
        return found
    }
}
