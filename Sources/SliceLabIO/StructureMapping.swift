import Foundation

/// How named structures (RT Structure Set ROIs, 3D Slicer segments) become classes of a label map: by an explicit
/// pattern list (`--roi "GTV*=1,Lung_L|Lung_R=2"`), by the class names of a set's `dataset.json`, or one class per
/// structure in file order.
public struct StructureMapping: Sendable, Equatable, CustomStringConvertible {
    public enum Rule: Sendable, Equatable {
        /// Structure i (0-based, file order) is class i + 1.
        case fileOrder
        /// A structure whose name is a class name (case-insensitive, surrounding blanks ignored) is that class;
        /// other structures are left out.
        case classNames([String])
        /// Shell patterns (`*`, `?`, `[…]`, case-insensitive), `|` between alternatives, each with its class; the
        /// first matching pattern wins; unmatched structures are left out.
        case patterns([(patterns: [String], label: Int)])

        public static func == (a: Rule, b: Rule) -> Bool {
            switch (a, b) {
            case (.fileOrder, .fileOrder): return true
            case (.classNames(let x), .classNames(let y)): return x == y
            case (.patterns(let x), .patterns(let y)):
                return x.map(\.patterns) == y.map(\.patterns) && x.map(\.label) == y.map(\.label)
            default: return false
            }
        }
    }

    /// What happens where two structures claim a voxel.
    public enum Overlap: String, Sendable, CaseIterable, Codable {
        /// The structure later in the mapping's order (the higher class, file order on ties) wins.
        case later
        /// An overlap is an error naming both structures.
        case error
    }

    public var rule: Rule
    public var overlap: Overlap

    public init(rule: Rule = .fileOrder, overlap: Overlap = .later) { (self.rule, self.overlap) = (rule, overlap) }

    /// `--roi` text: `PATTERN[|PATTERN…]=LABEL` separated by commas.
    ///
    /// - Throws: `InputError.invalidOption` naming the entry at fault.
    public init(parsing text: String, overlap: Overlap = .later) throws {
        let entries = try text.split(separator: ",").map { entry -> (patterns: [String], label: Int) in
            guard let equals = entry.lastIndex(of: "="), let label = Int(entry[entry.index(after: equals)...]),
                label > 0, label <= 65535, equals != entry.startIndex
            else {
                throw InputError.invalidOption(
                    "--roi '\(entry)': expected PATTERN[|PATTERN…]=LABEL with a label 1…65535")
            }
            return (entry[..<equals].split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }, label)
        }
        guard !entries.isEmpty else { throw InputError.invalidOption("--roi '\(text)': no PATTERN=LABEL entry") }
        self.init(rule: .patterns(entries), overlap: overlap)
    }

    /// The class of structure `index` named `name`; nil when the mapping leaves it out.
    public func label(name: String, index: Int) -> Int? {
        switch rule {
        case .fileOrder:
            return index + 1
        case .classNames(let names):
            let wanted = name.trimmingCharacters(in: .whitespaces).lowercased()
            guard
                let found = names.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces).lowercased() == wanted }),
                found > 0
            else { return nil }
            return found
        case .patterns(let entries):
            return entries.first { entry in
                entry.patterns.contains { fnmatch($0.lowercased(), name.lowercased(), 0) == 0 }
            }?.label
        }
    }

    /// The mapping of `names` in words, as the readers note it: `'GTV' → 1, 'Lung' → 2; left out: 'Couch'`.
    public func summary(_ names: [String]) -> String {
        var mapped: [String] = []
        var left: [String] = []
        for (index, name) in names.enumerated() {
            if let label = label(name: name, index: index) {
                mapped.append("'\(name)' → \(label)")
            } else {
                left.append("'\(name)'")
            }
        }
        let rule: String
        switch self.rule {
        case .fileOrder: rule = "one class per structure in file order"
        case .classNames: rule = "by class name"
        case .patterns: rule = "by --roi"
        }
        return "classes \(rule): " + (mapped.isEmpty ? "none" : mapped.joined(separator: ", "))
            + (left.isEmpty ? "" : "; left out: " + left.joined(separator: ", "))
    }

    public var description: String {
        switch rule {
        case .fileOrder: return "file order"
        case .classNames(let names): return "class names \(names)"
        case .patterns(let entries):
            return entries.map { "\($0.patterns.joined(separator: "|"))=\($0.label)" }.joined(separator: ",")
        }
    }
}

/// What reading a label map may need beyond the file: how named structures become classes, and the image series
/// whose grid a structure set is rasterised on.
public struct LabelReadingOptions: Sendable, Equatable {
    public var mapping: StructureMapping
    /// A DICOM series folder or file; nil to find the referenced series beside the structure set.
    public var reference: String?

    public init(mapping: StructureMapping = StructureMapping(), reference: String? = nil) {
        (self.mapping, self.reference) = (mapping, reference)
    }
}
