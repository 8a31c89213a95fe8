import DeepLab
import Foundation
import ImageFiles
import TestSupport
import Testing

@testable import SliceLabDatasets

/// The labeled-set loader: PNG and HDF5 cases load with the right shapes and values, and each malformed set
/// gives one typed error naming the case, or a listed skip with `skipBad`.
struct LabeledSetTests {
    /// Writes a set with case a (PNG 8-bit gray image, PNG labels) and case b (HDF5 (rows, columns) image, HDF5
    /// labels), both 6×5, with copies c (of a, train) and d (of b, val), and returns its folder.
    static func makeSet(json: String? = nil) throws -> URL {
        let folder = try TestSupport.temporaryFolder("labeled-set")
        let fm = FileManager.default
        for sub in ["images", "labels"] {
            try fm.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let pixels = (0..<30).map { UInt8($0 * 8) }
        try PNGImage(rows: 6, columns: 5, channels: 1, samples: pixels)
            .write(to: folder.appendingPathComponent("images/a.png").path)
        try PNGImage(rows: 6, columns: 5, channels: 1, samples: (0..<30).map { UInt8($0 % 3) })
            .write(to: folder.appendingPathComponent("labels/a.png").path)
        try HDF5File.write(to: folder.appendingPathComponent("images/b.h5").path) {
            try $0.write((0..<30).map { Float($0) - 10 }, shape: [6, 5], to: "/image")
        }
        try HDF5File.write(to: folder.appendingPathComponent("labels/b.h5").path) {
            try $0.write((0..<30).map { UInt16($0 % 2) }, shape: [6, 5], to: "/labels")
        }
        for (copy, original) in [("c", "a.png"), ("d", "b.h5")] {  // second cases, so skipping one leaves a split
            let ext = (original as NSString).pathExtension
            for sub in ["images", "labels"] {
                try fm.copyItem(
                    at: folder.appendingPathComponent("\(sub)/\(original)"),
                    to: folder.appendingPathComponent("\(sub)/\(copy).\(ext)"))
            }
        }
        let description =
            json ?? """
                {"name": "tiny", "classes": ["background", "one", "two"], "modality": "MR",
                 "splits": {"train": ["a", "c"], "val": ["b", "d"]},
                 "preprocessing": {"normalize": "percentile", "low": 0.5, "high": 99.5}}
                """
        try Data(description.utf8).write(to: folder.appendingPathComponent("dataset.json"))
        return folder
    }

    @Test func pngAndHDF5CasesLoadWithTheirShapesAndValues() throws {
        let folder = try Self.makeSet()
        defer { try? FileManager.default.removeItem(at: folder) }
        let set = try LabeledSet.open(folder.path)
        #expect(set.cases(in: "train") == ["a", "c"] && set.cases(in: "val") == ["b", "d"] && set.skipped.isEmpty)
        #expect(set.description.preprocessing == .percentile(low: 0.5, high: 99.5))
        let a = try set.load("a")
        #expect(a.image.shape == [1, 1, 6, 5] && a.image.values[7] == 56)
        #expect(a.labels.shape == [1, 6, 5] && a.labels.values[7] == 1)
        let b = try set.load("b")
        #expect(b.image.values.first == -10 && b.labels.values[3] == 1)
    }

    static func expectError(_ expected: DatasetError, in folder: URL, skippedCase: String) throws {
        #expect(throws: expected) { try LabeledSet.open(folder.path) }
        let set = try LabeledSet.open(folder.path, skipBad: true)
        #expect(set.skipped.map(\.name) == [skippedCase])
        #expect(set.skipped.first?.error == expected)
        #expect(!set.splits.values.joined().contains(skippedCase))
    }

    @Test func unpairedImageNamesTheCase() throws {
        let folder = try Self.makeSet()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.removeItem(at: folder.appendingPathComponent("labels/b.h5"))
        try Self.expectError(
            .unpairedImage(case: "b", file: folder.appendingPathComponent("images/b.h5").path),
            in: folder, skippedCase: "b")
    }

    @Test func unpairedLabelNamesTheCase() throws {
        let folder = try Self.makeSet()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.removeItem(at: folder.appendingPathComponent("images/a.png"))
        try Self.expectError(
            .unpairedLabel(case: "a", file: folder.appendingPathComponent("labels/a.png").path),
            in: folder, skippedCase: "a")
    }

    @Test func shapeMismatchNamesTheCase() throws {
        let folder = try Self.makeSet()
        defer { try? FileManager.default.removeItem(at: folder) }
        try HDF5File.write(to: folder.appendingPathComponent("labels/b.h5").path, updating: false) {
            try $0.write([UInt8](repeating: 0, count: 20), shape: [4, 5], to: "/labels")
        }
        try Self.expectError(
            .shapeMismatch(case: "b", image: [1, 6, 5], labels: [1, 4, 5]), in: folder,
            skippedCase: "b")
    }

    @Test func labelValueOutsideTheClassesNamesTheCase() throws {
        let folder = try Self.makeSet()
        defer { try? FileManager.default.removeItem(at: folder) }
        var labels = [UInt8](repeating: 0, count: 30)
        labels[4] = 7
        labels[9] = 7
        try PNGImage(rows: 6, columns: 5, channels: 1, samples: labels)
            .write(to: folder.appendingPathComponent("labels/a.png").path)
        try Self.expectError(
            .labelOutOfRange(case: "a", value: 7, pixels: 2, classCount: 3), in: folder,
            skippedCase: "a")
    }

    @Test func caseInTwoSplitsNamesTheCase() throws {
        let folder = try Self.makeSet(
            json: """
                {"name": "tiny", "classes": ["bg", "fg", "x"], "modality": "OT", "splits": {"train": ["a", "b", "c"], "val": ["b", "d"]}}
                """)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.expectError(.caseInTwoSplits(case: "b", splits: ["train", "val"]), in: folder, skippedCase: "b")
    }

    @Test func listedCaseWithoutFilesIsReported() throws {
        let folder = try Self.makeSet(
            json: """
                {"name": "tiny", "classes": ["bg", "fg", "x"], "modality": "OT", "splits": {"train": ["a", "zz", "c"], "val": ["b", "d"]}}
                """)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.expectError(.missingCase(case: "zz", split: "train"), in: folder, skippedCase: "zz")
    }

    @Test func unreadableImageIsATypedErrorNamingTheCase() throws {
        let folder = try Self.makeSet()
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("not a png".utf8).write(to: folder.appendingPathComponent("images/a.png"))
        #expect { try LabeledSet.open(folder.path) } throws: { error in
            guard case .unreadable(let name, let file, _) = error as? DatasetError else { return false }
            return name == "a" && file.hasSuffix("images/a.png")
        }
    }

    @Test func twoFormsOfOneCaseAreAmbiguous() throws {
        let folder = try Self.makeSet()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(
            at: folder.appendingPathComponent("images/a.png"),
            to: folder.appendingPathComponent("images/a.h5"))
        try Self.expectError(.ambiguous(case: "a", files: ["a.h5", "a.png", "a.png"]), in: folder, skippedCase: "a")
    }

    @Test func fileOfNoSplitIsReported() throws {
        let folder = try Self.makeSet()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(
            at: folder.appendingPathComponent("labels/a.png"),
            to: folder.appendingPathComponent("labels/stray.png"))
        try Self.expectError(
            .notInAnySplit(case: "stray", file: folder.appendingPathComponent("labels/stray.png").path),
            in: folder, skippedCase: "stray")
    }

    @Test func badCaseNamesAndEmptiedSplitsAreReported() throws {
        #expect(
            LabeledSet.isValidCaseName("axial019.b-2_x") && !LabeledSet.isValidCaseName("-a")
                && !LabeledSet.isValidCaseName("a b") && !LabeledSet.isValidCaseName(""))
        let folder = try Self.makeSet()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.removeItem(at: folder.appendingPathComponent("labels/b.h5"))
        try FileManager.default.removeItem(at: folder.appendingPathComponent("labels/d.h5"))
        // b and d were the val cases: skipping them empties the split, which is an error even with skipBad.
        #expect(throws: DatasetError.emptySplit(split: "val")) { try LabeledSet.open(folder.path, skipBad: true) }
    }

    @Test func badDescriptionSaysWhatIsWrong() throws {
        let folder = try Self.makeSet(json: #"{"name": "x", "modality": "MR", "splits": {}}"#)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect { try LabeledSet.open(folder.path) } throws: { error in
            "\(error)".contains("dataset.json") && "\(error)".contains("classes")
        }
        try Data(
            #"{"name": "x", "classes": ["a","b"], "modality": "MR", "splits": {}, "preprocessing": {"normalize": "fancy"}}"#
                .utf8
        )
        .write(to: folder.appendingPathComponent("dataset.json"))
        #expect { try LabeledSet.open(folder.path) } throws: { "\($0)".contains("fancy") }
        try Data(#"{"name": "x", "classes": ["a", "a"], "modality": "MR", "splits": {}}"#.utf8)
            .write(to: folder.appendingPathComponent("dataset.json"))
        #expect { try LabeledSet.open(folder.path) } throws: { "\($0)".contains("duplicates") }
    }

    /// `lesion_classes` names foreground classes; `--lesion-classes` takes names or label values.
    @Test func lesionClassesAreForegroundClasses() throws {
        let json =
            #"{"name": "x", "classes": ["background", "one", "two"], "modality": "MR", "#
            + #""splits": {"train": ["a", "c"], "val": ["b", "d"]}, "lesion_classes": ["#
        let folder = try Self.makeSet(json: json + #""two"]}"#)
        defer { try? FileManager.default.removeItem(at: folder) }
        let set = try LabeledSet.open(folder.path)
        #expect(set.description.lesionClasses == ["two"] && set.description.lesionClassIndices == [2])
        for bad in [#""background""#, #""three""#] {
            try Data((json + bad + "]}").utf8).write(to: folder.appendingPathComponent("dataset.json"))
            #expect { try LabeledSet.open(folder.path) } throws: { "\($0)".contains("'lesion_classes' names") }
        }
        let names = ["background", "one", "two"]
        #expect(try LesionClasses.resolve(["two", "1", "2"], classNames: names) == [1, 2])
        // `class_codes`: by class name, each category and type (and region) of value, scheme and meaning.
        let lesion =
            #"{"category": {"value": "49755003", "scheme": "SCT", "meaning": "Morphologically Abnormal Structure"}, "type": {"value": "52988006", "scheme": "SCT", "meaning": "Lesion"}}"#
        try Data((json + #""two"], "class_codes": {"two": "# + lesion + "}}").utf8)
            .write(to: folder.appendingPathComponent("dataset.json"))
        #expect(try LabeledSet.open(folder.path).description.classCodes?["two"]?.type.meaning == "Lesion")
        for (bad, message) in [
            (#"{"three": "# + lesion + "}", "'class_codes' names 'three'"),
            (
                #"{"two": {"category": {"value": "", "scheme": "SCT", "meaning": "x"}, "type": {"value": "1", "scheme": "SCT", "meaning": "x"}}}"#,
                "needs value, scheme and meaning"
            )
        ] {
            try Data((json + #""two"], "class_codes": "# + bad + "}").utf8).write(
                to: folder.appendingPathComponent("dataset.json"))
            #expect { try LabeledSet.open(folder.path) } throws: { "\($0)".contains(message) }
        }
        for bad in ["0", "3", "three"] {
            #expect(throws: DatasetError.self) { try LesionClasses.resolve([bad], classNames: names) }
        }
    }
}

/// The bundled demo sets (DICOM MR images, PNG label maps, built by Datasets/build_*.py) open under every rule
/// and load as 1-channel frames whose labels fit the image and the classes.
struct LabeledSetDemoTests {
    @Test(arguments: ["mni-brain", "brain-lesion"])
    func demoSetLoadsEveryCase(name: String) throws {
        let folder = TestSupport.packageRoot.appendingPathComponent("Sources/SliceLabKit/Resources/Demo/\(name)")
        let set = try LabeledSet.open(folder.path)
        #expect(set.skipped.isEmpty && set.cases(in: "test").count == 6 && set.cases(in: "train").count == 4)
        #expect(set.description.preprocessing == .percentile(low: 0.5, high: 99.5))
        #expect(set.description.lesionClassIndices == (name == "brain-lesion" ? [3] : []))
        for caseName in set.cases(in: "test") + set.cases(in: "train") {
            let sample = try set.load(caseName)
            #expect(sample.frameCount == 1 && sample.image.shape[1] == 1)
            #expect(Array(sample.image.shape.suffix(2)) == Array(sample.labels.shape.suffix(2)))
            #expect(Set(sample.labels.values).isSubset(of: Set((0..<Int32(set.classCount)))))
            #expect(sample.labels.values.contains(1), "\(caseName) has foreground")
            #expect((sample.image.values.max() ?? 0) > (sample.image.values.min() ?? 0))
        }
    }
}
