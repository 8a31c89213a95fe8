import DICOM
import Foundation

/// The files of one case: one image file per channel group (nnU-Net: `{case}_{XXXX}`; SliceLab's own layout and
/// the Decathlon: one file holding every channel) and its label file.
public struct CaseFiles: Sendable, Equatable {
    public var images: [URL]
    public var labels: URL
}

/// What a dataset layout found in a folder: the set as SliceLab's workflows take it, and every problem of its
/// structure by case.
struct LayoutContents {
    /// Name, classes (class i is label value i), modality and the selected splits (`train`, `val`, `test`).
    var description: LabeledSetDescription
    /// The labeled cases and their files.
    var files: [String: CaseFiles]
    /// Problems of single cases (a missing channel, an unpaired label, …), each naming its case.
    var caseProblems: [DatasetError]
    /// Problems of the set as a whole (`numTraining` that does not match, labels that are not 0, 1, 2, …).
    var setProblems: [String]
    /// How the label files are named after their case (".nii.gz", ".png").
    var fileEnding: String
    /// The channel names, in channel order.
    var channelNames: [String]
    /// How the splits were made, as JSON (recorded in results files).
    var splitJSON: String
    /// The folds of the cross-validation split.
    var foldCount: Int

    /// The contents of a layout's set: its fold selected among the labeled training cases
    /// (`CrossValidationSplit`), its name from `dataset.json` (else the folder's), its modality from the first
    /// channel's name. Labeled held-out cases (`testFiles`) are the `test` split instead of the fold's `val`.
    init(
        folder: URL, json: [String: Any], classes: [String], channelNames: [String], files: [String: CaseFiles],
        caseProblems: [DatasetError], setProblems: [String], fileEnding: String,
        selection: SplitSelection, testFiles: [String: CaseFiles] = [:]
    ) throws {
        let (splits, splitJSON, foldCount) = try CrossValidationSplit.select(
            cases: files.keys.sorted(), folder: folder,
            selection: selection, heldOut: testFiles.keys.sorted())
        let files = files.merging(testFiles) { training, _ in training }
        description = LabeledSetDescription(
            name: json["name"] as? String ?? folder.lastPathComponent,
            classes: classes, modality: DatasetLayouts.modality(channelNames[0]),
            splits: splits, lesionClasses: json["lesion_classes"] as? [String])
        if let codes = json["class_codes"] {
            do {
                description.classCodes = try JSONDecoder().decode(
                    [String: SegmentCoding].self, from: JSONSerialization.data(withJSONObject: codes))
            } catch {
                throw DatasetError.invalidDescription(
                    file: folder.appendingPathComponent("dataset.json").path,
                    reason: "'class_codes' is not {class name: {category, type, region}} of {value, scheme, meaning}")
            }
        }
        if let problem =
            LabeledSetDescription.codesProblem(description.classCodes, classes: classes)
            ?? LesionClasses.problem(description.lesionClasses ?? [], classes: classes)
        {
            throw DatasetError.invalidDescription(
                file: folder.appendingPathComponent("dataset.json").path, reason: problem)
        }
        (self.files, self.caseProblems, self.setProblems) = (files, caseProblems, setProblems)
        (self.fileEnding, self.channelNames, self.splitJSON) = (fileEnding, channelNames, splitJSON)
        self.foldCount = foldCount
    }
}

/// A dataset layout that other tools write, recognised by its `dataset.json` (nnU-Net v2 raw, the Medical
/// Segmentation Decathlon). A new layout is one conforming type plus its entry in `DatasetLayouts.all`;
/// SliceLab's own layout (Datasets/README.md) is what `LabeledSet` reads when no layout recognises the file.
protocol DatasetLayout: Sendable {
    /// The layout for people and for `--format` ("nnunet", "msd").
    var name: String { get }
    /// Whether `json`, a parsed `dataset.json`, describes a set of this layout.
    func recognizes(_ json: [String: Any]) -> Bool
    /// Lists the set's cases and files and selects its splits.
    ///
    /// - Throws: `DatasetError.invalidDescription` naming `dataset.json` when it cannot describe a set.
    func open(folder: URL, json: [String: Any], selection: SplitSelection) throws -> LayoutContents
}

/// The layouts SliceLab recognises besides its own, in the order they are tried.
public enum DatasetLayouts {
    static let all: [any DatasetLayout] = [NNUNetLayout(), MSDLayout()]

    /// The layout whose `dataset.json` this is, or nil for SliceLab's own layout.
    static func layout(of json: [String: Any]) -> (any DatasetLayout)? { all.first { $0.recognizes(json) } }

    /// Reads `dataset.json` as a JSON object.
    ///
    /// - Throws: `DatasetError.invalidDescription` naming the file.
    static func readJSON(_ url: URL) throws -> [String: Any] {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw DatasetError.invalidDescription(
                file: url.path,
                reason: "missing (a labeled set needs dataset.json: SliceLab's layout, nnU-Net v2 "
                    + "or the Medical Segmentation Decathlon)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data), let json = object as? [String: Any] else {
            throw DatasetError.invalidDescription(file: url.path, reason: "not a JSON object")
        }
        return json
    }

    /// An integer of a JSON value (a number without fraction, or a string of digits as MSD writes its keys).
    static func integer(_ value: Any?) -> Int? {
        if let number = value as? NSNumber {
            let double = number.doubleValue
            return double == double.rounded() && abs(double) < 1e9 ? Int(double) : nil
        }
        if let text = value as? String { return Int(text) }
        return nil
    }

    /// Class names from `value → name`, which must be the values 0, 1, 2, … (nnU-Net's rule, and what SliceLab's
    /// classes are), or the problem.
    static func classNames(_ byValue: [Int: String]) -> (names: [String], problem: String?) {
        let values = byValue.keys.sorted()
        guard values == Array(0..<values.count) else {
            return ([], "'labels' must be the consecutive values 0, 1, 2, … (nnU-Net's rule), got \(values)")
        }
        guard (2...256).contains(values.count) else {
            return ([], "'labels' must declare 2…256 classes (background 0 included), got \(values.count)")
        }
        return (values.map { byValue[$0]! }, nil)
    }

    /// The names of a table `"0": name, "1": name, …` (the channels of `channel_names` or `modality`), in index
    /// order.
    ///
    /// - Throws: `DatasetError.invalidDescription` naming `file` for other keys, non-string names, or indices
    ///   that are not 0, 1, 2, ….
    static func indexedNames(_ table: Any?, key: String, file: String) throws -> [String] {
        var names: [Int: String] = [:]
        for (index, value) in table as? [String: Any] ?? [:] {
            guard let position = Int(index), let name = value as? String else {
                throw DatasetError.invalidDescription(
                    file: file, reason: "'\(key)' maps channel indices (\"0\", \"1\", …) to names, got \"\(index)\"")
            }
            names[position] = name
        }
        guard !names.isEmpty, names.keys.sorted() == Array(0..<names.count) else {
            throw DatasetError.invalidDescription(
                file: file, reason: "'\(key)' must name the channels 0, 1, 2, …, got \(names.keys.sorted())")
        }
        return (0..<names.count).map { names[$0]! }
    }

    /// SliceLab's modality code for a channel name: "CT" stays, MR sequences become "MR", anything else "OT".
    static func modality(_ channelName: String) -> String {
        let upper = channelName.uppercased()
        if upper == "CT" { return "CT" }
        let mr = ["MR", "T1", "T2", "FLAIR", "ADC", "DWI", "PD", "SWI"]
        return mr.contains(where: { upper.contains($0) }) ? "MR" : "OT"
    }

    /// JSON text of a value (sorted keys).
    public static func jsonText(_ object: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether `url` is a folder.
    static func isFolder(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// The regular files of `folder` whose name ends in `ending`, by name (dot-files left out; none when the
    /// folder is missing).

    static func files(in folder: URL, ending: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { !$0.hasPrefix(".") && $0.hasSuffix(ending) && $0.count > ending.count }.sorted()
    }
}
