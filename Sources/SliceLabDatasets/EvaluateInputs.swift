import Foundation
import ImageFiles
import SliceLabIO
import SliceLabSupport

/// Label files for `evaluate`: PNG (8/16-bit gray), HDF5 `/labels`, DICOM SEG; single files or folders
/// paired by file stem.
public enum EvaluateInputs {
    /// One case to evaluate: its id (the file stem) and the two files.
    public struct CasePair: Sendable, Equatable {
        public let id: String
        public let prediction: String
        public let reference: String
    }

    /// Pairs `prediction` with `reference`: two files form one case (named after the reference's stem); two
    /// folders are paired by stem, sorted by id.
    ///
    /// - Throws: `DatasetError.unpairedFiles` listing every unpaired stem, `.duplicateStem`, `.noLabelFiles`,
    ///   `.mixedInputs`, `InputError.unsupportedFile` for a missing path.
    public static func pairs(prediction: String, reference: String) throws -> [CasePair] {
        let predictionIsFolder = try isFolder(prediction)
        let referenceIsFolder = try isFolder(reference)
        guard predictionIsFolder == referenceIsFolder else {
            throw DatasetError.mixedInputs(prediction: prediction, reference: reference)
        }
        guard predictionIsFolder else {
            return [CasePair(id: stem(reference), prediction: prediction, reference: reference)]
        }
        let predictions = try labelFiles(in: prediction)
        let dataset = try datasetLabels(reference)
        let references = try dataset?.files ?? labelFiles(in: reference)
        let missingReference = predictions.keys.filter { references[$0] == nil }.sorted()
        // A set's labels may be more than a prediction folder holds (nnU-Net predicts one fold's cases).
        let missingPrediction = dataset != nil ? [] : references.keys.filter { predictions[$0] == nil }.sorted()
        guard missingReference.isEmpty && missingPrediction.isEmpty else {
            throw DatasetError.unpairedFiles(
                predictionsWithoutReference: missingReference,
                referencesWithoutPrediction: missingPrediction)
        }
        return references.keys.sorted().compactMap { id in
            guard predictions[id] != nil else { return nil }
            guard let p = predictions[id], let r = references[id] else { return nil }
            return CasePair(id: id, prediction: p, reference: r)
        }
    }

    /// The label files (by case) and class names of an nnU-Net or Decathlon set at `folder`, or nil when the
    /// folder has no `dataset.json` that such a layout recognises.
    ///
    /// - Throws: `DatasetError.invalidDescription` for a recognised but unusable `dataset.json`.
    public static func datasetLabels(
        _ folder: String
    ) throws -> (files: [String: String], classNames: [String], lesionClasses: [String]?)? {
        let root = URL(fileURLWithPath: folder)
        let descriptionFile = root.appendingPathComponent("dataset.json")
        guard FileManager.default.fileExists(atPath: descriptionFile.path) else { return nil }
        let json = try DatasetLayouts.readJSON(descriptionFile)
        guard let layout = DatasetLayouts.layout(of: json) else { return nil }
        let contents = try layout.open(folder: root, json: json, selection: SplitSelection(preprocessedFolder: nil))
        return (
            contents.files.mapValues(\.labels.path), contents.description.classes, contents.description.lesionClasses
        )
    }

    /// A case's class probabilities, [frames, K, rows, columns] as `segment --probabilities` writes them: the
    /// `/probabilities` of `path`, or of `path/<case>.h5` when `path` is a folder.
    ///
    /// - Throws: `InputError.invalidContent` naming the file when it holds none or their shape is not the case's;
    ///   `ReadLimitError` beyond `limits`; `ImageFileError`.
    public static func probabilities(
        _ path: String, case caseID: String, frames: Int, classCount: Int, rows: Int, columns: Int,
        limits: ReadLimits
    ) throws -> [Float] {
        let file = try isFolder(path) ? URL(fileURLWithPath: path).appendingPathComponent(caseID + ".h5").path : path
        guard FileManager.default.fileExists(atPath: file) else {
            throw InputError.invalidContent(file: file, reason: "no probabilities for case '\(caseID)'")
        }
        let h5 = try HDF5File.open(file)
        guard h5.exists("/probabilities") else {
            throw InputError.invalidContent(file: file, reason: "no /probabilities (segment --probabilities writes it)")
        }
        let shape = try h5.shape(of: "/probabilities")
        let expected = [frames, classCount, rows, columns]
        guard shape == expected || (frames == 1 && shape == Array(expected.dropFirst())) else {
            throw InputError.invalidContent(
                file: file, reason: "/probabilities has shape \(shape), the case needs \(expected)")
        }
        try limits.check(shape, bytesPerValue: 4, file: file, what: "/probabilities")
        return try h5.read("/probabilities", as: Float.self).values
    }

    static func isFolder(_ path: String) throws -> Bool {
        var directory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &directory) else {
            throw InputError.unsupportedFile(file: path, reason: "no such file or folder")
        }
        return directory.boolValue
    }

    static func stem(_ path: String) -> String {
        ImageFormats.stem(URL(fileURLWithPath: path).lastPathComponent)
    }

    /// The label files of a folder (every file of a format SliceLab reads) by stem.
    static func labelFiles(in folder: String) throws -> [String: String] {
        let found: [(stem: String, url: URL)]
        do {
            found = try ImageFormats.files(in: URL(fileURLWithPath: folder))
        } catch {
            throw InputError.unsupportedFile(file: folder, reason: "cannot list: \(error.localizedDescription)")
        }
        var files = [String: String]()
        for (key, url) in found {
            guard files[key] == nil else { throw DatasetError.duplicateStem(folder: folder, stem: key) }
            files[key] = url.path
        }
        guard !files.isEmpty else { throw DatasetError.noLabelFiles(folder: folder) }
        return files
    }
}
