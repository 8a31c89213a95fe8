import Foundation

/// nnU-Net v2's raw dataset layout (nnU-Net's documentation/dataset_format.md): `imagesTr/{case}_{XXXX}{ending}`,
/// one file per channel XXXX = 0000, 0001, …; `labelsTr/{case}{ending}`; optional `imagesTs/`, read as the
/// held-out `test` split when `labelsTs/` beside it holds its labels (as `dataset export` writes a set with a
/// test split, and as many published sets ship them; without labels it is not read); `dataset.json` with `channel_names` (index → name), `labels` (name → value, 0, 1, 2, …),
/// `numTraining` and `file_ending`, optionally `dataset` (case → `images`, `label`, paths relative to the
/// folder) instead of the two folders. Recognised by `file_ending` and `channel_names`.
struct NNUNetLayout: DatasetLayout {
    var name: String { "nnunet" }

    func recognizes(_ json: [String: Any]) -> Bool {
        json["file_ending"] is String && json["channel_names"] is [String: Any]
    }

    func open(folder: URL, json: [String: Any], selection: SplitSelection) throws -> LayoutContents {
        let descriptionFile = folder.appendingPathComponent("dataset.json").path
        func invalid(_ reason: String) -> DatasetError {
            .invalidDescription(file: descriptionFile, reason: reason)
        }
        guard let ending = json["file_ending"] as? String, ending.hasPrefix("."), ending.count > 1 else {
            throw invalid("'file_ending' must be a file ending such as \".nii.gz\" or \".png\"")
        }
        let channelNames = try DatasetLayouts.indexedNames(
            json["channel_names"], key: "channel_names",
            file: descriptionFile)
        guard let labelTable = json["labels"] as? [String: Any] else {
            throw invalid("missing required key 'labels' (class name → label value)")
        }
        var byValue: [Int: String] = [:]
        var setProblems: [String] = []
        for (name, value) in labelTable.sorted(by: { $0.key < $1.key }) {
            guard let number = DatasetLayouts.integer(value) else {
                throw invalid("'labels'.\(name): region labels (lists of values) are not supported; give one value")
            }
            if let other = byValue[number] {
                throw invalid("'labels': \(other) and \(name) share the value \(number)")
            }
            byValue[number] = name
        }
        let (classes, labelProblem) = DatasetLayouts.classNames(byValue)
        if let labelProblem { throw invalid(labelProblem) }

        var files: [String: CaseFiles] = [:]
        var caseProblems: [DatasetError] = []
        if let explicit = json["dataset"] as? [String: Any] {
            for (name, entry) in explicit.sorted(by: { $0.key < $1.key }) {
                guard let entry = entry as? [String: Any], let images = entry["images"] as? [String],
                    let label = entry["label"] as? String
                else {
                    throw invalid("'dataset'.\(name) must hold 'images' (a list) and 'label'")
                }
                let urls = images.map { URL(fileURLWithPath: $0, relativeTo: folder).standardizedFileURL }
                let labelURL = URL(fileURLWithPath: label, relativeTo: folder).standardizedFileURL
                let missing = (urls + [labelURL]).filter { !FileManager.default.fileExists(atPath: $0.path) }
                if let first = missing.first {
                    caseProblems.append(
                        first == labelURL
                            ? .unpairedImage(case: name, file: urls.first?.path ?? "")
                            : .missingChannel(case: name, file: first.path))
                } else {
                    files[name] = CaseFiles(images: urls, labels: labelURL)
                }
            }
        } else {
            (files, caseProblems) = try Self.scan(
                folder: folder, ending: ending, channelCount: channelNames.count,
                descriptionFile: descriptionFile)
        }
        var testFiles: [String: CaseFiles] = [:]
        if json["dataset"] == nil, DatasetLayouts.isFolder(folder.appendingPathComponent("labelsTs")) {
            let test: [DatasetError]
            (testFiles, test) = try Self.scan(
                folder: folder, ending: ending, channelCount: channelNames.count,
                descriptionFile: descriptionFile, images: "imagesTs", labels: "labelsTs")
            caseProblems += test
            for name in testFiles.keys.sorted() where files[name] != nil {
                setProblems.append("case \(name) is in both labelsTr/ and labelsTs/")
            }
        }
        let found = Set(files.keys).union(caseProblems.compactMap(\.caseName)).subtracting(testFiles.keys).count
        if let expected = DatasetLayouts.integer(json["numTraining"]) {
            if expected != found {
                setProblems.append("'numTraining' is \(expected) but \(found) training cases are on disk")
            }
        } else {
            setProblems.append("missing required key 'numTraining'")
        }
        return try LayoutContents(
            folder: folder, json: json, classes: classes, channelNames: channelNames,
            files: files, caseProblems: caseProblems, setProblems: setProblems,
            fileEnding: ending, selection: selection, testFiles: testFiles)
    }

    /// Pairs `imagesTr/{case}_{XXXX}{ending}` with `labelsTr/{case}{ending}` (or the test folders), listing each
    /// case's problems.
    static func scan(
        folder: URL, ending: String, channelCount: Int, descriptionFile: String,
        images: String = "imagesTr", labels: String = "labelsTr"
    )
        throws -> ([String: CaseFiles], [DatasetError])
    {
        let imagesFolder = folder.appendingPathComponent(images)
        let labelsFolder = folder.appendingPathComponent(labels)
        for required in [imagesFolder, labelsFolder] {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: required.path, isDirectory: &isDirectory),
                isDirectory.boolValue
            else {
                throw DatasetError.invalidDescription(
                    file: required.path,
                    reason: "missing folder (an nnU-Net "
                        + "raw dataset has imagesTr/ and labelsTr/ beside dataset.json)")
            }
        }
        var problems: [DatasetError] = []
        var channelFiles: [String: [Int: URL]] = [:]
        for name in DatasetLayouts.files(in: imagesFolder, ending: ending) {
            let identifier = String(name.dropLast(ending.count))
            let suffix = identifier.suffix(5)
            guard identifier.count > 5, suffix.first == "_", let channel = Int(suffix.dropFirst()),
                suffix.dropFirst().allSatisfy(\.isNumber)
            else {
                problems.append(
                    .badChannelFileName(
                        case: identifier,
                        file: imagesFolder.appendingPathComponent(name).path))
                continue
            }
            channelFiles[String(identifier.dropLast(5)), default: [:]][channel] =
                imagesFolder
                .appendingPathComponent(name)
        }
        let labels = Dictionary(
            uniqueKeysWithValues: DatasetLayouts.files(in: labelsFolder, ending: ending)
                .map { (String($0.dropLast(ending.count)), labelsFolder.appendingPathComponent($0)) })
        var files: [String: CaseFiles] = [:]
        for name in Set(channelFiles.keys).union(labels.keys).sorted() {
            guard let byChannel = channelFiles[name] else {
                problems.append(.unpairedLabel(case: name, file: labels[name]!.path))
                continue
            }
            guard let label = labels[name] else {
                problems.append(.unpairedImage(case: name, file: byChannel.values.map(\.path).min()!))
                continue
            }
            // An RGB PNG holds three channels in one file (nnU-Net's NaturalImage2DIO): files 0000… must be
            // contiguous; their channels are counted when the case is read.
            let indices = byChannel.keys.sorted()
            if indices != Array(0..<indices.count) {
                let missing = (0..<(indices.last! + 1)).first { byChannel[$0] == nil }!
                problems.append(
                    .missingChannel(
                        case: name,
                        file:
                            imagesFolder
                            .appendingPathComponent(name + String(format: "_%04d", missing) + ending).path))
                continue
            }
            if indices.count < channelCount, !ending.lowercased().hasSuffix(".png") {
                problems.append(
                    .missingChannel(
                        case: name,
                        file:
                            imagesFolder
                            .appendingPathComponent(name + String(format: "_%04d", indices.count) + ending).path))
                continue
            }
            if indices.count > channelCount {
                problems.append(.channelCount(case: name, found: indices.count, expected: channelCount))
                continue
            }
            files[name] = CaseFiles(images: indices.map { byChannel[$0]! }, labels: label)
        }
        return (files, problems)
    }
}
