import Foundation
import SliceLabIO

/// The Medical Segmentation Decathlon's layout: `dataset.json` with `training`, a list of `{"image", "label"}`
/// paths relative to the folder (`./imagesTr/la_003.nii.gz`), `labels` (value → name, "0" the background),
/// `modality` (channel index → name), `numTraining`, and `test` (images only, not read). A 4-D image holds the
/// channels along its 4th axis. The case is the image file's name without `.nii.gz`. Recognised by `training`
/// being a list of objects with an `image`.
struct MSDLayout: DatasetLayout {
    var name: String { "msd" }

    func recognizes(_ json: [String: Any]) -> Bool {
        guard let training = json["training"] as? [Any], let first = training.first as? [String: Any] else {
            return false
        }
        return first["image"] is String
    }

    func open(folder: URL, json: [String: Any], selection: SplitSelection) throws -> LayoutContents {
        let descriptionFile = folder.appendingPathComponent("dataset.json").path
        func invalid(_ reason: String) -> DatasetError {
            .invalidDescription(file: descriptionFile, reason: reason)
        }
        guard let labelTable = json["labels"] as? [String: Any] else {
            throw invalid("missing required key 'labels' (label value → class name)")
        }
        var byValue: [Int: String] = [:]
        for (key, value) in labelTable {
            guard let number = Int(key), let name = value as? String else {
                throw invalid("'labels' maps label values (\"0\", \"1\", …) to class names, got \"\(key)\"")
            }
            byValue[number] = name
        }
        let (classes, labelProblem) = DatasetLayouts.classNames(byValue)
        if let labelProblem { throw invalid(labelProblem) }
        let channelNames = try DatasetLayouts.indexedNames(json["modality"], key: "modality", file: descriptionFile)
        let training = json["training"] as? [Any] ?? []
        var files: [String: CaseFiles] = [:]
        var caseProblems: [DatasetError] = []
        var endings: Set<String> = []
        for (index, entry) in training.enumerated() {
            guard let entry = entry as? [String: Any], let image = entry["image"] as? String,
                let label = entry["label"] as? String
            else {
                throw invalid("'training'[\(index)] must hold 'image' and 'label' paths")
            }
            let imageURL = URL(fileURLWithPath: image, relativeTo: folder).standardizedFileURL
            let labelURL = URL(fileURLWithPath: label, relativeTo: folder).standardizedFileURL
            let ending = ImageFormats.knownEnding(imageURL.lastPathComponent) ?? ".nii.gz"
            endings.insert(ending)
            let name = String(imageURL.lastPathComponent.dropLast(ending.count))
            if files[name] != nil || caseProblems.contains(where: { $0.caseName == name }) {
                caseProblems.append(.caseInTwoSplits(case: name, splits: ["training", "training"]))
                continue
            }
            let (hasImage, hasLabel) = (
                FileManager.default.fileExists(atPath: imageURL.path),
                FileManager.default.fileExists(atPath: labelURL.path)
            )
            if hasImage && hasLabel {
                files[name] = CaseFiles(images: [imageURL], labels: labelURL)
            } else if hasImage {
                caseProblems.append(.unpairedImage(case: name, file: imageURL.path))
            } else if hasLabel {
                caseProblems.append(.unpairedLabel(case: name, file: labelURL.path))
            } else {
                caseProblems.append(.missingCase(case: name, split: "training"))
            }
        }
        var setProblems: [String] = []
        if training.isEmpty { setProblems.append("'training' lists no case") }
        if let expected = DatasetLayouts.integer(json["numTraining"]), expected != training.count {
            setProblems.append("'numTraining' is \(expected) but 'training' lists \(training.count) cases")
        }
        return try LayoutContents(
            folder: folder, json: json, classes: classes, channelNames: channelNames,
            files: files, caseProblems: caseProblems, setProblems: setProblems,
            fileEnding: endings.count == 1 ? endings.first! : ".nii.gz", selection: selection)
    }
}
