import DeepLab
import Foundation

/// The description of a labeled set, `dataset.json` (issue #8):
/// `{"name", "classes", "modality", "splits": {"train": […], "val": […], "test": […]}, "spacing"?, "preprocessing"?}`.
public struct LabeledSetDescription: Codable, Equatable, Sendable {
    public var name: String
    /// Class names; label value i is class i, 0 the background.
    public var classes: [String]
    /// DICOM modality, e.g. "MR" or "CT".
    public var modality: String?
    public var splits: [String: [String]]
    /// Pixel spacing in millimetres (row, column) where the images carry none.
    public var spacing: [Double]?
    /// The normalization to train with.
    public var preprocessing: Preprocessing?
}

/// One loaded case: the raw image [C, H, W] (not yet preprocessed) and its labels [H, W].
public struct LabeledSample: Sendable {
    public let name: String
    public var image: FloatTensor
    public var labels: LabelTensor
}

/// A case skipped under `skipBad`, with the error that excluded it.
public struct SkippedCase: Equatable, Sendable {
    public let name: String
    public let error: LabeledSetError
}

/// A labeled set on disk: `images/`, `labels/` and `dataset.json`, validated when opened.
///
/// Opening checks the structure (pairs, splits) and every case's content (readable, matching shapes, label
/// values within the classes). Without `skipBad` the first problem throws a `LabeledSetError` naming the case;
/// with it the case is left out and listed in `skipped` (structural errors of the description still throw).
public final class LabeledSet: @unchecked Sendable {
    public let folder: URL
    public let description: LabeledSetDescription
    /// Valid cases per split, in `dataset.json` order.
    public let splits: [String: [String]]
    public let skipped: [SkippedCase]
    let files: [String: (image: URL, labels: URL)]

    public var classCount: Int { description.classes.count }

    /// The cases of `split` (empty when the set has no such split).
    public func cases(in split: String) -> [String] { splits[split] ?? [] }

    /// Opens and validates the set at `path`.
    ///
    /// - Throws: `LabeledSetError` naming `dataset.json` or the first bad case.
    public static func open(_ path: String, skipBad: Bool = false) throws -> LabeledSet {
        let folder = URL(fileURLWithPath: path)
        let descriptionURL = folder.appendingPathComponent("dataset.json")
        let description: LabeledSetDescription
        do {
            description = try JSONDecoder().decode(LabeledSetDescription.self, from: Data(contentsOf: descriptionURL))
        } catch let error as DecodingError {
            throw LabeledSetError.invalidDescription(file: descriptionURL.path, reason: decodingReason(error))
        } catch {
            throw LabeledSetError.invalidDescription(file: descriptionURL.path,
                                                     reason: "cannot read: \(error.localizedDescription)")
        }
        guard description.classes.count >= 2 else {
            throw LabeledSetError.invalidDescription(file: descriptionURL.path, reason: "needs at least 2 classes")
        }
        if let preprocessing = description.preprocessing {
            do { try preprocessing.validate() } catch {
                throw LabeledSetError.invalidDescription(file: descriptionURL.path, reason: "\(error)")
            }
        }
        let images = try entries(folder.appendingPathComponent("images"), folderAllowed: true)
        let labels = try entries(folder.appendingPathComponent("labels"), folderAllowed: false)
        var problems: [SkippedCase] = []
        func report(_ error: LabeledSetError) throws {
            guard skipBad else { throw error }
            if let name = error.caseName, !problems.contains(where: { $0.name == name }) {
                problems.append(SkippedCase(name: name, error: error))
            }
        }
        for (name, url) in images.sorted(by: { $0.key < $1.key }) where labels[name] == nil {
            try report(.unpairedImage(case: name, file: url.path))
        }
        for (name, url) in labels.sorted(by: { $0.key < $1.key }) where images[name] == nil {
            try report(.unpairedLabel(case: name, file: url.path))
        }
        var owner: [String: String] = [:]
        for split in description.splits.keys.sorted() {
            for name in description.splits[split] ?? [] {
                if let first = owner[name] {
                    try report(.caseInTwoSplits(case: name, splits: [first, split]))
                    continue
                }
                owner[name] = split
                if images[name] == nil && labels[name] == nil { try report(.missingCase(case: name, split: split)) }
            }
        }
        var files: [String: (image: URL, labels: URL)] = [:]
        for (name, image) in images { if let label = labels[name] { files[name] = (image, label) } }
        let set = LabeledSet(folder: folder, description: description, splits: [:], skipped: [], files: files)
        for name in owner.keys.sorted() where files[name] != nil && !problems.contains(where: { $0.name == name }) {
            do { _ = try set.load(name) } catch let error as LabeledSetError { try report(error) }
        }
        let bad = Set(problems.map(\.name))
        let valid = description.splits.mapValues { $0.filter { !bad.contains($0) && files[$0] != nil } }
        return LabeledSet(folder: folder, description: description, splits: valid, skipped: problems, files: files)
    }

    init(folder: URL, description: LabeledSetDescription, splits: [String: [String]], skipped: [SkippedCase],
         files: [String: (image: URL, labels: URL)]) {
        self.folder = folder
        self.description = description
        self.splits = splits
        self.skipped = skipped
        self.files = files
    }

    /// Loads one case: image [C, H, W] as stored (Float32) and labels [H, W], checked against each other and
    /// the classes.
    ///
    /// - Throws: `LabeledSetError` naming the case.
    public func load(_ name: String) throws -> LabeledSample {
        guard let (imageURL, labelURL) = files[name] else {
            throw LabeledSetError.missingCase(case: name, split: "any")
        }
        let image = try readCaseImage(imageURL, case: name)
        let labels = try readCaseLabels(labelURL, case: name)
        let imageSize = Array(image.shape.suffix(2))
        guard imageSize == labels.shape else {
            throw LabeledSetError.shapeMismatch(case: name, image: imageSize, labels: labels.shape)
        }
        if let bad = labels.values.first(where: { $0 < 0 || Int($0) >= classCount }) {
            throw LabeledSetError.labelOutOfRange(case: name, value: Int(bad), classCount: classCount)
        }
        return LabeledSample(name: name, image: image, labels: labels)
    }

    /// Case name → file for the entries of `folder` with a known extension (and sub-folders for series).
    private static func entries(_ folder: URL, folderAllowed: Bool) throws -> [String: URL] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder.path) } catch {
            throw LabeledSetError.invalidDescription(file: folder.path, reason: "the folder is missing or unreadable")
        }
        var result: [String: URL] = [:]
        for name in names where !name.hasPrefix(".") {
            let url = folder.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
            let caseName: String
            if isDirectory.boolValue {
                guard folderAllowed else { continue }
                caseName = name
            } else {
                guard ["png", "h5", "dcm"].contains(url.pathExtension.lowercased()) else { continue }
                caseName = url.deletingPathExtension().lastPathComponent
            }
            if let other = result[caseName] {
                throw LabeledSetError.unsupported(case: caseName, file: url.path,
                                                  reason: "two files for one case (\(other.lastPathComponent) too)")
            }
            result[caseName] = url
        }
        return result
    }

    private static func decodingReason(_ error: DecodingError) -> String {
        switch error {
        case let .keyNotFound(key, _): return "missing key \"\(key.stringValue)\""
        case let .typeMismatch(_, context), let .valueNotFound(_, context), let .dataCorrupted(context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return (path.isEmpty ? "" : "\(path): ") + context.debugDescription
        @unknown default: return "\(error)"
        }
    }
}
