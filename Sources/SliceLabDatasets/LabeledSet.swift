import DICOM
import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabSupport

/// The description of a labeled set, `dataset.json` (Datasets/README.md): `name`, `classes`, `modality`,
/// `splits`, and optionally `spacing`, `preprocessing` and `lesion_classes`. Other keys are provenance and are
/// ignored.
public struct LabeledSetDescription: Codable, Equatable, Sendable {
    public var name: String
    /// Class names; label value i is class i, 0 the background.
    public var classes: [String]
    /// DICOM modality code, e.g. "MR", "CT", "OT".
    public var modality: String
    public var splits: [String: [String]]
    /// Pixel spacing in millimetres (row, column) for images that carry none.
    public var spacing: [Double]?
    /// The normalization to train with.
    public var preprocessing: Preprocessing?
    /// The classes (by name) that `evaluate` and `compare` also score lesion by lesion (`lesion_classes`).
    public var lesionClasses: [String]?
    /// Coded concepts of classes (by name): what a DICOM SEG's segments say they are (`class_codes`:
    /// `{"gray matter": {"category": {"value": "91723000", "scheme": "SCT", "meaning": "Anatomical Structure"},
    /// "type": {…}, "region": {…}}}`); training stores them in the checkpoint.
    public var classCodes: [String: SegmentCoding]?

    private enum CodingKeys: String, CodingKey {
        case name, classes, modality, splits, spacing, preprocessing
        case lesionClasses = "lesion_classes"
        case classCodes = "class_codes"
    }

    public init(
        name: String, classes: [String], modality: String, splits: [String: [String]], spacing: [Double]? = nil,
        preprocessing: Preprocessing? = nil, lesionClasses: [String]? = nil
    ) {
        (self.name, self.classes, self.modality, self.splits) = (name, classes, modality, splits)
        (self.spacing, self.preprocessing, self.lesionClasses) = (spacing, preprocessing, lesionClasses)
    }

    /// What is wrong with `class_codes`: a key that is no class, or a code without its three parts.
    static func codesProblem(_ codes: [String: SegmentCoding]?, classes: [String]) -> String? {
        for (name, coding) in (codes ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard classes.contains(name) else { return "'class_codes' names '\(name)', which is not a class" }
            if let problem = coding.problem { return "'class_codes' of '\(name)': \(problem)" }
        }
        return nil
    }

    /// The class indices of `lesionClasses`, ascending; none when the set declares none.
    public var lesionClassIndices: [Int] {
        (lesionClasses ?? []).compactMap { classes.firstIndex(of: $0) }.sorted()
    }

    /// The rules of Datasets/README.md that JSON decoding does not check.
    func validationProblem() -> String? {
        if name.isEmpty || modality.isEmpty { return "'name' and 'modality' must not be empty" }
        if !(2...256).contains(classes.count) || classes.contains(where: \.isEmpty) {
            return "'classes' must hold 2…256 non-empty strings, got \(classes)"
        }
        if Set(classes).count != classes.count { return "'classes' has duplicates: \(classes)" }
        if let spacing, spacing.count != 2 || !spacing.allSatisfy({ $0 > 0 && $0.isFinite }) {
            return "'spacing' must be [row, column] in mm, both > 0, got \(spacing)"
        }
        do { try preprocessing?.validate() } catch { return "\(error)" }
        if let problem = Self.codesProblem(classCodes, classes: classes) { return problem }
        return LesionClasses.problem(lesionClasses ?? [], classes: classes)
    }
}

/// A case skipped under `skipBad`, with the error that excluded it.
public struct SkippedCase: Equatable, Sendable {
    public let name: String
    public let error: DatasetError
}

/// A labeled set on disk, validated when opened: SliceLab's own layout (`images/`, `labels/` and
/// `dataset.json`), or a layout of `DatasetLayouts` (nnU-Net v2 raw, the Medical Segmentation Decathlon)
/// recognised by its `dataset.json`.
///
/// Opening applies every rule of Datasets/README.md (or of the recognised layout): structure (pairs, forms,
/// splits, names) and each listed case's content (readable, matching shapes, label values within the classes).
/// Without `skipBad` the first problem throws a `DatasetError` naming the case; with it the case is left out
/// and listed in `skipped`. Set-level problems always throw.
// @unchecked Sendable: every property is a constant but the `internal(set)` ones (layout, file ending, channels,
// split record, fold count), which `open` sets before the
// set is returned; after that it is read-only, and cases load in parallel from it.
public final class LabeledSet: @unchecked Sendable {
    public let folder: URL
    public let description: LabeledSetDescription
    /// Valid cases per split, in `dataset.json` order. An nnU-Net or Decathlon set has `train` and `val` (the
    /// selected fold's) and `test`, the same cases as `val`: their test labels are not on disk.
    public let splits: [String: [String]]
    public let skipped: [SkippedCase]
    /// Every labeled case's files.
    public let files: [String: CaseFiles]
    /// The bound on decoded sizes every case is read with (`--max-memory`).
    public let limits: ReadLimits
    /// "slicelab", or the recognised layout's name ("nnunet", "msd").
    public internal(set) var layout = "slicelab"
    /// How label files are named after their case in this set (".nii.gz", ".png"), nil when they differ.
    public internal(set) var fileEnding: String?
    /// The channel names `dataset.json` declares (empty for SliceLab's own layout).
    public internal(set) var channelNames: [String] = []
    /// How the splits were made (fold, source, seed, cases) as JSON, for sets whose splits SliceLab chose.
    public internal(set) var splitJSON: String?
    /// The folds of an nnU-Net or Decathlon set's cross-validation split (`splits_final.json`, else the generated
    /// one); nil for SliceLab's own layout, whose splits are fixed.
    public internal(set) var foldCount: Int?

    public var classCount: Int { description.classes.count }

    /// The cases of `split` (empty when the set has no such split).
    public func cases(in split: String) -> [String] { splits[split] ?? [] }

    /// Opens and validates the set at `path`.
    ///
    /// - Throws: `DatasetError` naming `dataset.json` or the first bad case.
    public static func open(
        _ path: String, skipBad: Bool = false, limits: ReadLimits = .standard,
        selection: SplitSelection = SplitSelection()
    ) throws -> LabeledSet {
        let folder = URL(fileURLWithPath: path)
        let json = try DatasetLayouts.readJSON(folder.appendingPathComponent("dataset.json"))
        if let layout = DatasetLayouts.layout(of: json) {
            return try open(folder, layout: layout, json: json, skipBad: skipBad, limits: limits, selection: selection)
        }
        let description = try readDescription(folder.appendingPathComponent("dataset.json"))
        let images = try entries(folder.appendingPathComponent("images"), foldersAllowed: true)
        let labels = try entries(folder.appendingPathComponent("labels"), foldersAllowed: false)
        var problems: [SkippedCase] = []
        func report(_ error: DatasetError) throws {
            guard skipBad else { throw error }
            if let name = error.caseName, !problems.contains(where: { $0.name == name }) {
                problems.append(SkippedCase(name: name, error: error))
            }
        }
        var owner: [String: String] = [:]
        for split in description.splits.keys.sorted() {
            for name in description.splits[split] ?? [] {
                if let first = owner[name] {
                    try report(.caseInTwoSplits(case: name, splits: [first, split]))
                    continue
                }
                owner[name] = split
                if !isValidCaseName(name) { try report(.badCaseName(case: name)) }
            }
        }
        for (name, urls) in (images.merging(labels) { $0 + $1 }).sorted(by: { $0.key < $1.key })
        where owner[name] == nil {
            try report(.notInAnySplit(case: name, file: urls[0].path))
        }
        var files: [String: CaseFiles] = [:]
        for (name, split) in owner.sorted(by: { $0.key < $1.key }) {
            let (imageForms, labelForms) = (images[name] ?? [], labels[name] ?? [])
            if imageForms.count > 1 || labelForms.count > 1 {
                try report(.ambiguous(case: name, files: (imageForms + labelForms).map(\.lastPathComponent)))
            } else if let image = imageForms.first, let label = labelForms.first {
                files[name] = CaseFiles(images: [image], labels: label)
            } else if let image = imageForms.first {
                try report(.unpairedImage(case: name, file: image.path))
            } else if let label = labelForms.first {
                try report(.unpairedLabel(case: name, file: label.path))
            } else {
                try report(.missingCase(case: name, split: split))
            }
        }
        let unchecked = LabeledSet(
            folder: folder, description: description, splits: [:], skipped: [], files: files,
            limits: limits)
        for name in files.keys.sorted() where !problems.contains(where: { $0.name == name }) {
            do { _ = try unchecked.load(name) } catch let error as DatasetError { try report(error) }
        }
        let bad = Set(problems.map(\.name))
        let valid = description.splits.mapValues { $0.filter { !bad.contains($0) && files[$0] != nil } }
        for (split, cases) in description.splits.sorted(by: { $0.key < $1.key })
        where !cases.isEmpty && (valid[split] ?? []).isEmpty {
            throw DatasetError.emptySplit(split: split)
        }
        guard selection.crossValidation else {
            return LabeledSet(
                folder: folder, description: description, splits: valid, skipped: problems, files: files,
                limits: limits)
        }
        // A fold of the cross-validation over the train and val cases (nnU-Net's seeded split, or the folder's
        // splits_final.json); the test cases stay held out.
        let chosen = try CrossValidationSplit.select(
            cases: (valid["train"] ?? []) + (valid["val"] ?? []), folder: folder, selection: selection,
            heldOut: valid["test"] ?? [])
        let set = LabeledSet(
            folder: folder, description: description, splits: chosen.splits, skipped: problems, files: files,
            limits: limits)
        (set.splitJSON, set.foldCount) = (chosen.json, chosen.foldCount)
        return set
    }

    /// Opens a set of a recognised layout: its structure from the layout, each case's content checked here.
    private static func open(
        _ folder: URL, layout: any DatasetLayout, json: [String: Any], skipBad: Bool,
        limits: ReadLimits, selection: SplitSelection
    ) throws -> LabeledSet {
        let contents = try layout.open(folder: folder, json: json, selection: selection)
        if let problem = contents.setProblems.first {
            throw DatasetError.invalidDescription(
                file: folder.appendingPathComponent("dataset.json").path,
                reason: problem)
        }
        var problems: [SkippedCase] = []
        func report(_ error: DatasetError) throws {
            guard skipBad else { throw error }
            if let name = error.caseName, !problems.contains(where: { $0.name == name }) {
                problems.append(SkippedCase(name: name, error: error))
            }
        }
        for problem in contents.caseProblems { try report(problem) }
        let unchecked = LabeledSet(
            folder: folder, description: contents.description, splits: [:], skipped: [],
            files: contents.files, limits: limits)
        unchecked.channelNames = contents.channelNames
        for name in contents.files.keys.sorted() where !problems.contains(where: { $0.name == name }) {
            do { _ = try unchecked.load(name) } catch let error as DatasetError { try report(error) }
        }
        let bad = Set(problems.map(\.name))
        var valid: [String: [String]] = [:]
        for (split, cases) in contents.description.splits.sorted(by: { $0.key < $1.key }) {
            let unknown = cases.filter { contents.files[$0] == nil && !bad.contains($0) }
            if let first = unknown.first {
                throw DatasetError.invalidDescription(
                    file: folder.path,
                    reason: "the selected fold's split \"\(split)\" lists case \(first), which has "
                        + "no image and label in the set (\(unknown.count) such case(s))")
            }
            valid[split] = cases.filter { !bad.contains($0) }
            if !cases.isEmpty && valid[split]!.isEmpty { throw DatasetError.emptySplit(split: split) }
        }
        let set = LabeledSet(
            folder: folder, description: contents.description, splits: valid, skipped: problems,
            files: contents.files, limits: limits)
        (set.layout, set.fileEnding, set.channelNames) = (layout.name, contents.fileEnding, contents.channelNames)
        set.splitJSON = contents.splitJSON
        set.foldCount = contents.foldCount
        return set
    }

    init(
        folder: URL, description: LabeledSetDescription, splits: [String: [String]], skipped: [SkippedCase],
        files: [String: CaseFiles], limits: ReadLimits = .standard
    ) {
        self.folder = folder
        self.limits = limits
        self.description = description
        self.splits = splits
        self.skipped = skipped
        self.files = files
    }

    /// Loads one case: image [F, C, H, W] as stored (Float32, physical values) and labels [F, H, W], checked
    /// against each other and the classes.
    ///
    /// - Throws: `DatasetError` naming the case.
    public func load(_ name: String) throws -> LabeledSample {
        guard let caseFiles = files[name] else {
            throw DatasetError.missingCase(case: name, split: "any")
        }
        let (image, fileSpacing) = try readCaseChannels(caseFiles.images, case: name, limits: limits)
        if !channelNames.isEmpty, image.shape[1] != channelNames.count {
            throw DatasetError.channelCount(case: name, found: image.shape[1], expected: channelNames.count)
        }
        let spacing = fileSpacing ?? description.spacing.map { [1] + $0 } ?? [1, 1, 1]
        // Named structures (Slicer segments, RTSTRUCT ROIs) become the classes of the same names, on the case's image.
        var labels = try readCaseLabels(
            caseFiles.labels, case: name, limits: limits,
            options: LabelReadingOptions(
                mapping: StructureMapping(rule: .classNames(description.classes)), reference: caseFiles.images[0].path))
        let imageShape = [image.shape[0], image.shape[2], image.shape[3]]
        if labels.shape.count == 2 { labels.shape = [1] + labels.shape }
        guard imageShape == labels.shape else {
            throw DatasetError.shapeMismatch(case: name, image: imageShape, labels: labels.shape)
        }
        if let bad = labels.values.first(where: { $0 < 0 || Int($0) >= classCount }) {
            throw DatasetError.labelOutOfRange(
                case: name, value: Int(bad),
                pixels: labels.values.lazy.filter { $0 == bad }.count,
                classCount: classCount)
        }
        var sample = LabeledSample(name: name, image: image, labels: labels, spacing: spacing)
        sample.geometry = try readCaseGeometry(caseFiles.images[0], case: name, limits: limits)
        sample.hasSpacing = fileSpacing != nil || description.spacing != nil
        return sample
    }

    private static func readDescription(_ url: URL) throws -> LabeledSetDescription {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw DatasetError.invalidDescription(
                file: url.path, reason: "missing (a labeled set needs dataset.json, images/ and labels/)")
        }
        let description: LabeledSetDescription
        do {
            description = try JSONDecoder().decode(LabeledSetDescription.self, from: Data(contentsOf: url))
        } catch let error as DecodingError {
            throw DatasetError.invalidDescription(file: url.path, reason: decodingReason(error))
        } catch {
            throw DatasetError.invalidDescription(
                file: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
        if let problem = description.validationProblem() {
            throw DatasetError.invalidDescription(file: url.path, reason: problem)
        }
        return description
    }

    /// Case name → its files in `folder` (known extensions, and sub-folders for series); dot-files ignored.
    private static func entries(_ folder: URL, foldersAllowed: Bool) throws -> [String: [URL]] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder.path) } catch {
            throw DatasetError.invalidDescription(file: folder.path, reason: "missing folder")
        }
        var result: [String: [URL]] = [:]
        for name in names.sorted() where !name.hasPrefix(".") {
            let url = folder.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
                if foldersAllowed { result[name, default: []].append(url) }
            } else if ImageFormats.isInput(url) {
                result[ImageFormats.stem(name), default: []].append(url)
            }
        }
        return result
    }

    static func isValidCaseName(_ name: String) -> Bool {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard let first = name.first, first.isASCII, first.isLetter || first.isNumber, name.count <= 128 else {
            return false
        }
        return name.allSatisfy { allowed.contains($0) }
    }

    private static func decodingReason(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): return "missing required key '\(key.stringValue)'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return (path.isEmpty ? "" : "'\(path)': ") + context.debugDescription
        @unknown default: return "\(error)"
        }
    }
}
