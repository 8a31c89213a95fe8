import Foundation
import ImageFiles
import SliceLabIO
import SliceLabSupport

/// `slicelab dataset check PATH`: every problem of a labeled set (SliceLab's layout, nnU-Net v2 raw or the
/// Decathlon), listed by case, as nnU-Net's `verify_dataset_integrity` checks a set and more: every case has its
/// image(s) and label, image and label lie on the same grid (shape; spacing, origin and direction within 1e-4
/// where the files carry them), labels hold only the declared values, channel counts agree.
public enum DatasetCheck {
    /// The largest difference allowed between two geometries' spacing, origin or direction entries.
    public static let geometryTolerance = 1e-4

    /// What a check found.
    public struct Report: Sendable {
        /// "slicelab", "nnunet" or "msd".
        public var layout: String
        public var caseCount: Int
        /// Problems of the set as a whole (its `dataset.json`, its splits).
        public var setProblems: [String]
        /// Problems of single cases, in case order; a case may have several.
        public var caseProblems: [DatasetError]

        public var isClean: Bool { setProblems.isEmpty && caseProblems.isEmpty }

        /// One line per problem, then a summary line.
        public var lines: [String] {
            let summary =
                "\(layout) set, \(caseCount) labeled case(s): "
                + (isClean
                    ? "no problems"
                    : "\(setProblems.count + caseProblems.count) problem(s) in "
                        + "\(Set(caseProblems.compactMap(\.caseName)).count) case(s)"
                        + (setProblems.isEmpty ? "" : " and the set"))
            return setProblems.map { "set: \($0)" } + caseProblems.map(\.description) + [summary]
        }
    }

    /// Checks the set at `path`, reading every case.
    ///
    /// - Throws: `DatasetError.invalidDescription` only when `dataset.json` itself cannot be read as a set
    ///   description (then there is nothing to check case by case).
    public static func run(
        _ path: String, limits: ReadLimits = .standard,
        selection: SplitSelection = SplitSelection()
    ) throws -> Report {
        let folder = URL(fileURLWithPath: path)
        let json = try DatasetLayouts.readJSON(folder.appendingPathComponent("dataset.json"))
        guard let layout = DatasetLayouts.layout(of: json) else {
            return try checkOwnLayout(path, limits: limits)
        }
        let contents = try layout.open(folder: folder, json: json, selection: selection)
        let set = LabeledSet(
            folder: folder, description: contents.description, splits: [:], skipped: [],
            files: contents.files, limits: limits)
        set.channelNames = contents.channelNames
        var problems = contents.caseProblems
        for name in contents.files.keys.sorted() { problems += caseProblems(set, name) }
        problems = byCase(problems)
        let caseCount = Set(contents.files.keys).union(contents.caseProblems.compactMap(\.caseName)).count
        return Report(
            layout: layout.name, caseCount: caseCount, setProblems: contents.setProblems,
            caseProblems: problems)
    }

    /// SliceLab's own layout: its structure as `LabeledSet.open` validates it (each case's first problem), then
    /// the content of every case with the checks below.
    static func checkOwnLayout(_ path: String, limits: ReadLimits) throws -> Report {
        let set: LabeledSet
        do { set = try LabeledSet.open(path, skipBad: true, limits: limits) } catch let error as DatasetError
            where error.caseName == nil
        {
            return Report(layout: "slicelab", caseCount: 0, setProblems: [error.description], caseProblems: [])
        }
        var problems = set.skipped.map(\.error)
        let skipped = Set(set.skipped.map(\.name))
        for name in set.files.keys.sorted() where !skipped.contains(name) { problems += caseProblems(set, name) }
        problems = byCase(problems)
        return Report(
            layout: "slicelab", caseCount: Set(set.files.keys).union(skipped).count, setProblems: [],
            caseProblems: problems)
    }

    /// Problems in case order, each case's in the order found.
    static func byCase(_ problems: [DatasetError]) -> [DatasetError] {
        problems.enumerated()
            .sorted { ($0.element.caseName ?? "", $0.offset) < ($1.element.caseName ?? "", $1.offset) }
            .map(\.element)
    }

    /// Every problem of one case's content.
    static func caseProblems(_ set: LabeledSet, _ name: String) -> [DatasetError] {
        guard let files = set.files[name] else { return [] }
        var problems: [DatasetError] = []
        var images: [(url: URL, shape: [Int], geometry: VolumeGeometry?)] = []
        var channels = 0
        for url in files.images {
            do {
                let (image, spacing) = try readCaseImage(url, case: name, limits: set.limits)
                var geometry = try readCaseGeometry(url, case: name, limits: set.limits)
                if geometry == nil, let spacing {
                    geometry = VolumeGeometry(spacing: spacing, origin: [], direction: [])
                }
                images.append((url, [image.shape[0], image.shape[2], image.shape[3]], geometry))
                channels += image.shape[1]
            } catch let error as DatasetError { problems.append(error) } catch {
                problems.append(.unreadable(case: name, file: url.path, reason: "\(error)"))
            }
        }
        if problems.isEmpty, !set.channelNames.isEmpty, channels != set.channelNames.count {
            problems.append(.channelCount(case: name, found: channels, expected: set.channelNames.count))
        }
        for other in images.dropFirst() {
            if other.shape != images[0].shape {
                problems.append(.shapeMismatch(case: name, image: images[0].shape, labels: other.shape))
            } else if let reason = geometryDifference(images[0].geometry, other.geometry) {
                problems.append(
                    .geometryMismatch(
                        case: name, file: other.url.path,
                        reason: reason + " (vs "
                            + images[0].url.lastPathComponent + ")"))
            }
        }
        do {
            let loaded = try LoadedLabels.read(files.labels.path, limits: set.limits)
            let labels = loaded.labels
            let shape = labels.dimensions
            if let first = images.first {
                if shape != first.shape {
                    problems.append(.shapeMismatch(case: name, image: first.shape, labels: shape))
                } else {
                    var geometry = try readCaseGeometry(files.labels, case: name, limits: set.limits)
                    if geometry == nil, loaded.hasSpacing {
                        geometry = VolumeGeometry(spacing: labels.spacing, origin: [], direction: [])
                    }
                    if let reason = geometryDifference(first.geometry, geometry) {
                        problems.append(
                            .geometryMismatch(
                                case: name, file: files.labels.path,
                                reason: reason + " (label vs image)"))
                    }
                }
            }
            var counts: [Int32: Int] = [:]
            for value in labels.labels where value < 0 || Int(value) >= set.classCount {
                counts[value, default: 0] += 1
            }
            for (value, pixels) in counts.sorted(by: { $0.key < $1.key }) {
                problems.append(
                    .labelOutOfRange(
                        case: name, value: Int(value), pixels: pixels,
                        classCount: set.classCount))
            }
        } catch let error as DatasetError { problems.append(error) } catch {
            problems.append(.unreadable(case: name, file: files.labels.path, reason: "\(error)"))
        }
        return problems
    }

    /// How two geometries differ beyond `geometryTolerance` (parts a file does not carry are not compared), or nil.
    static func geometryDifference(_ a: VolumeGeometry?, _ b: VolumeGeometry?) -> String? {
        guard let a, let b else { return nil }
        for (part, x, y) in [
            ("spacing", a.spacing, b.spacing), ("origin", a.origin, b.origin),
            ("direction", a.direction, b.direction)
        ] where !x.isEmpty && !y.isEmpty {
            if x.count != y.count || zip(x, y).contains(where: { abs($0 - $1) > geometryTolerance }) {
                let format = { (v: [Double]) in
                    "(" + v.map { String(format: "%.6g", $0) }.joined(separator: ", ") + ")"
                }
                return "\(part) \(format(y)) differs from \(format(x)) by more than \(geometryTolerance)"
            }
        }
        return nil
    }
}
