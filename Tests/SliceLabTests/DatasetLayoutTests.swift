import Foundation
import ImageFiles
import TestSupport
import Testing

@testable import SliceLabDatasets
@testable import SliceLabKit

/// nnU-Net v2 and Decathlon sets as they are on disk: recognition, nnU-Net's folds, `dataset check`,
/// `dataset export`, and 3-D metrics through `evaluate` and `compare --external/--predictions`.
@Suite struct DatasetLayoutTests {
    static let goldensURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/dataset_metrics_goldens.json")

    // MARK: - Splits

    /// nnU-Net's `generate_crossval_split` = KFold(5, shuffle, random_state=seed): the permutations are NumPy
    /// 1.26.4's `RandomState(seed).shuffle(arange(n))` ([0,7,3,9,6,4,1,8,5,2] for n = 10, seed 12345;
    /// [10,19,8,17,3,12,16,0,15,7,18,11,14,6,20,13,22,21,9,4,1,5,2] for n = 23; [8,5,0,2,1,9,7,3,6,4] for n = 10,
    /// seed 7), cut into folds of n/5 (the first n % 5 one longer), each sorted.
    @Test func foldsAreNNUNetsKFoldOverSortedIdentifiers() {
        func names(_ n: Int) -> [String] { (0..<n).map { String(format: "c%02d", $0) } }
        func val(_ indices: [Int]) -> [String] { indices.sorted().map { String(format: "c%02d", $0) } }
        let ten = CrossValidationSplit.folds(names(10).reversed(), seed: 12345)
        #expect(ten.map(\.val) == [val([0, 7]), val([3, 9]), val([6, 4]), val([1, 8]), val([5, 2])])
        #expect(ten[2].train == names(10).filter { !["c04", "c06"].contains($0) })
        let twentyThree = CrossValidationSplit.folds(names(23), seed: 12345)
        #expect(
            twentyThree.map(\.val) == [
                val([10, 19, 8, 17, 3]), val([12, 16, 0, 15, 7]), val([18, 11, 14, 6, 20]),
                val([13, 22, 21, 9]), val([4, 1, 5, 2])
            ])
        #expect(CrossValidationSplit.folds(names(10), seed: 7)[0].val == val([8, 5]))
        #expect(CrossValidationSplit.folds(names(3), seed: 12345).map(\.val) == [[]])  // KFold needs ≥ 5 cases
    }

    // MARK: - Reading

    @Test func nnUNetSetOpensWithChannelsGeometryAndAGeneratedFold() throws {
        let folder = try TestSupport.temporaryFolder()
        let root = try DatasetFixtures.makeNNUNet(in: folder, count: 6)
        let set = try LabeledSet.open(root.path, selection: SplitSelection(fold: 1, preprocessedFolder: nil))
        #expect(set.layout == "nnunet" && set.fileEnding == ".nii.gz" && set.channelNames == ["CT", "noise"])
        #expect(set.description.classes == ["background", "sphere", "box"] && set.description.modality == "CT")
        // n = 6, seed 12345: permutation [5, 3, 4, 0, 1, 2] (NumPy 1.26.4), folds [5, 3], [4], [0], [1], [2].
        #expect(set.cases(in: "val") == ["case_004"] && set.cases(in: "test") == set.cases(in: "val"))
        #expect(set.cases(in: "train") == ["case_000", "case_001", "case_002", "case_003", "case_005"])
        #expect(set.splitJSON?.contains("\"seed\":12345") == true)
        let sample = try set.load("case_002")
        #expect(sample.image.shape == [8, 2, 16, 16] && sample.labels.shape == [8, 16, 16])
        #expect(sample.labels.values == DatasetFixtures.reference(2))
        let plane = 16 * 16
        #expect(
            Array(sample.image.values[(3 * 2 + 1) * plane..<(3 * 2 + 2) * plane])
                == Array(DatasetFixtures.image(2, channel: 1)[3 * plane..<4 * plane]))
        #expect(sample.spacing == [3.0, 0.75, 1.25])
        #expect(sample.geometry.map { zip($0.origin, [-10, 20, 30]).allSatisfy { abs($0 - $1) < 1e-4 } } == true)

        let preprocessed = folder.appendingPathComponent("preprocessed")
        let planned = preprocessed.appendingPathComponent("Dataset501_Synth")
        try FileManager.default.createDirectory(at: planned, withIntermediateDirectories: true)
        try DatasetFixtures.writeSplits(
            [(["case_005"], ["case_003"]), (["case_003"], ["case_005", "case_001"])],
            in: planned)
        let fromPreprocessed = try LabeledSet.open(
            root.path,
            selection: SplitSelection(
                fold: 1, preprocessedFolder: preprocessed.path))
        #expect(fromPreprocessed.cases(in: "train") == ["case_003"])
        #expect(fromPreprocessed.cases(in: "val") == ["case_005", "case_001"])
        #expect(fromPreprocessed.splitJSON?.contains("preprocessed") == true)

        try DatasetFixtures.writeSplits([(["case_000", "case_001"], ["case_002"])], in: root)
        let fromFile = try LabeledSet.open(root.path, selection: SplitSelection(preprocessedFolder: preprocessed.path))
        #expect(fromFile.cases(in: "train") == ["case_000", "case_001"] && fromFile.cases(in: "test") == ["case_002"])
        #expect(throws: DatasetError.self) { try LabeledSet.open(root.path, selection: SplitSelection(fold: 1)) }
    }

    /// Labeled held-out cases in `imagesTs/` + `labelsTs/` are the `test` split (not the fold's `val`), left out
    /// of the folds and of `numTraining`, and checked by `dataset check` like the training cases.
    @Test func labeledHeldOutCasesAreTheTestSplit() throws {
        let folder = try TestSupport.temporaryFolder()
        let root = try DatasetFixtures.makeNNUNet(in: folder, count: 8)
        let manager = FileManager.default
        try manager.removeItem(at: root.appendingPathComponent("imagesTs/test_009_0000.nii.gz"))
        try manager.createDirectory(at: root.appendingPathComponent("labelsTs"), withIntermediateDirectories: true)
        for k in [6, 7] {
            let name = DatasetFixtures.caseName(k)
            for file in ["\(name)_0000.nii.gz", "\(name)_0001.nii.gz"] {
                try manager.moveItem(
                    at: root.appendingPathComponent("imagesTr/" + file),
                    to: root.appendingPathComponent("imagesTs/" + file))
            }
            try manager.moveItem(
                at: root.appendingPathComponent("labelsTr/\(name).nii.gz"),
                to: root.appendingPathComponent("labelsTs/\(name).nii.gz"))
        }
        var json =
            try JSONSerialization.jsonObject(with: Data(contentsOf: root.appendingPathComponent("dataset.json")))
            as! [String: Any]
        json["numTraining"] = 6
        try JSONSerialization.data(withJSONObject: json).write(to: root.appendingPathComponent("dataset.json"))

        let set = try LabeledSet.open(root.path, selection: SplitSelection(fold: 0, preprocessedFolder: nil))
        #expect(set.cases(in: "test") == ["case_006", "case_007"])
        let folds = Set(set.cases(in: "train") + set.cases(in: "val"))
        #expect(folds == Set((0..<6).map(DatasetFixtures.caseName)) && !set.cases(in: "val").isEmpty)
        #expect(set.splitJSON?.contains("\"test\":[\"case_006\",\"case_007\"]") == true, "\(set.splitJSON ?? "")")
        #expect(try set.load("case_007").labels.values == DatasetFixtures.reference(7))
        let check = try TestSupport.slicelab(["dataset", "check", root.path])
        #expect(check.status == 0, "\(check.standardOutput)\(check.standardError)")
        #expect(check.standardOutput.contains("8 labeled case(s): no problems"), "\(check.standardOutput)")

        // A held-out label without its image is a problem of that case, as in labelsTr/.
        try manager.moveItem(
            at: root.appendingPathComponent("imagesTs/case_007_0001.nii.gz"),
            to: folder.appendingPathComponent("moved.nii.gz"))
        let broken = try TestSupport.slicelab(["dataset", "check", root.path])
        #expect(
            broken.status == 1 && broken.standardOutput.contains("case case_007: missing channel"),
            "\(broken.standardOutput)")
    }

    /// A 2-D nnU-Net set of PNGs: read as one-slice cases, and `compare --predictions` writes `.png` label files.
    @Test func nnUNetPNGSetComparesAndWritesPNGPredictions() throws {
        let folder = try TestSupport.temporaryFolder()
        let root = folder.appendingPathComponent("Dataset502_Flat")
        for sub in ["imagesTr", "labelsTr"] {
            try FileManager.default.createDirectory(
                at: root.appendingPathComponent(sub),
                withIntermediateDirectories: true)
        }
        for k in 0..<5 {
            let labels = Array(DatasetFixtures.reference(k)[(3 * 256)..<(4 * 256)])  // slice 3
            try PNGImage(rows: 16, columns: 16, channels: 1, samples: labels.map { UInt8($0) * 90 + UInt8(k) })
                .write(to: root.appendingPathComponent("imagesTr/flat\(k)_0000.png").path)
            try PNGImage(rows: 16, columns: 16, channels: 1, samples: labels.map { UInt8($0) })
                .write(to: root.appendingPathComponent("labelsTr/flat\(k).png").path)
        }
        let json: [String: Any] = [
            "channel_names": ["0": "gray"], "labels": ["background": 0, "sphere": 1, "box": 2],
            "numTraining": 5, "file_ending": ".png"
        ]
        try JSONSerialization.data(withJSONObject: json).write(to: root.appendingPathComponent("dataset.json"))
        let set = try LabeledSet.open(root.path, selection: SplitSelection(preprocessedFolder: nil))
        #expect(set.description.name == "Dataset502_Flat" && set.description.modality == "OT")
        #expect(set.cases(in: "test") == ["flat0"])  // n = 5, seed 12345: permutation [0, 4, 3, 1, 2]
        #expect(try set.load("flat2").image.shape == [1, 1, 16, 16])
        let written = folder.appendingPathComponent("predictions")
        let run = try TestSupport.slicelab([
            "compare", root.path, "--model", try CompareTests.makeModel(in: folder),
            "--classical", "kmeans:space=gray,map=train-vote", "--predictions",
            written.path, "--out", folder.appendingPathComponent("r.h5").path
        ])
        #expect(run.status == 0, "\(run.standardError)")
        let png = try PNGImage.read(written.appendingPathComponent("kmeans-gray-train-vote/flat0.png").path)
        #expect(png.rows == 16 && png.columns == 16 && png.channels == 1)
    }

    @Test func decathlonSetReadsFourDimensionalImagesAsChannels() throws {
        let folder = try TestSupport.temporaryFolder()
        let root = try DatasetFixtures.makeMSD(in: folder)
        let set = try LabeledSet.open(root.path, selection: SplitSelection(preprocessedFolder: nil))
        #expect(set.layout == "msd" && set.channelNames == ["T1", "T2"] && set.description.modality == "MR")
        #expect(set.description.classes == ["background", "sphere", "box"])
        #expect(set.cases(in: "train").count == 4 && set.cases(in: "val").count == 1)  // n = 5: fold 0 is [0]
        #expect(set.cases(in: "val") == ["synth_000"])
        let sample = try set.load("synth_003")
        #expect(sample.image.shape == [8, 2, 16, 16])
        let plane = 16 * 16
        #expect(
            Array(sample.image.values[(5 * 2 + 1) * plane..<(5 * 2 + 2) * plane])
                == Array(DatasetFixtures.image(3, channel: 1)[5 * plane..<6 * plane]))
    }

    /// `train` on an nnU-Net set: fold K's train cases train (slice by slice), its val cases validate; a fold the
    /// split does not have is one line, exit 1.
    @Test func trainUsesTheSelectedFoldOfAnNNUNetSet() throws {
        let folder = try TestSupport.temporaryFolder()
        let root = try DatasetFixtures.makeNNUNet(in: folder, count: 6, channels: 1)
        let out = folder.appendingPathComponent("m.h5").path
        let result = try TestSupport.slicelab([
            "train", root.path, "--arch", "deeplabv3_mobilenet_v2", "--num-classes",
            "3", "--steps", "1", "--batch", "2", "--crop", "16", "--fold", "1",
            "--out", out
        ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(FileManager.default.fileExists(atPath: out))
        let bad = try TestSupport.slicelab([
            "train", root.path, "--arch", "deeplabv3_mobilenet_v2", "--num-classes",
            "3", "--steps", "1", "--fold", "5", "--out", out
        ])
        #expect(bad.status == 1 && bad.standardError.contains("--fold 5: the split has folds 0…4"))
        #expect(bad.standardError.split(separator: "\n").count == 1)
    }

    // MARK: - dataset check

    @Test func datasetCheckListsEveryProblemByCaseAndExitsOne() throws {
        let folder = try TestSupport.temporaryFolder()
        let clean = try DatasetFixtures.makeNNUNet(in: folder.appendingPathComponent("clean"))
        let ok = try TestSupport.slicelab(["dataset", "check", clean.path])
        #expect(ok.status == 0, "\(ok.standardOutput)\(ok.standardError)")
        #expect(ok.standardOutput.contains("nnunet set, 4 labeled case(s): no problems"))
        let own = try TestSupport.slicelab(["dataset", "check", try CompareTests.makeSet(in: folder).path])
        #expect(
            own.status == 0 && own.standardOutput.contains("slicelab set, 6 labeled case(s): no problems"),
            "\(own.standardOutput)\(own.standardError)")

        let root = try DatasetFixtures.makeNNUNet(in: folder.appendingPathComponent("bad"))
        let fm = FileManager.default
        try fm.removeItem(at: root.appendingPathComponent("imagesTr/case_001_0001.nii.gz"))
        var labels = DatasetFixtures.reference(2)
        labels[5] = 7
        try NIfTIImage.write(
            .labels(labels), dimensions: DatasetFixtures.dimensions,
            geometry: DatasetFixtures.geometry,
            to: root.appendingPathComponent("labelsTr/case_002.nii.gz").path)
        var moved = DatasetFixtures.geometry
        moved.origin[2] += 0.5
        try NIfTIImage.write(
            .labels(DatasetFixtures.reference(3)), dimensions: DatasetFixtures.dimensions,
            geometry: moved, to: root.appendingPathComponent("labelsTr/case_003.nii.gz").path)
        try fm.copyItem(
            at: root.appendingPathComponent("labelsTr/case_000.nii.gz"),
            to: root.appendingPathComponent("labelsTr/case_007.nii.gz"))
        let result = try TestSupport.slicelab(["dataset", "check", root.path])
        #expect(result.status == 1)
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("set: 'numTraining' is 4 but 5") })
        #expect(
            lines.contains {
                $0.hasPrefix("case case_001: missing channel file:") && $0.hasSuffix("case_001_0001.nii.gz")
            })
        #expect(lines.contains { $0.hasPrefix("case case_002: label outside classes: value 7 in 1 pixels") })
        #expect(lines.contains { $0.hasPrefix("case case_003: geometry mismatch:") && $0.contains("origin") })
        #expect(lines.contains { $0.hasPrefix("case case_007: unpaired label:") })
        #expect(!lines.contains { $0.contains("case_000") })
        #expect(result.standardError.split(separator: "\n").count == 1 && result.standardError.contains("problem(s)"))
    }

    // MARK: - dataset export

    @Test func exportWritesARawSetThatFollowsNNUNetsRules() throws {
        let folder = try TestSupport.temporaryFolder()
        let source = try DatasetFixtures.makeMSD(in: folder)
        let out = folder.appendingPathComponent("raw")
        let result = try TestSupport.slicelab([
            "dataset", "export", source.path, "--format", "nnunet",
            "--out", out.path, "--id", "7"
        ])
        #expect(result.status == 0, "\(result.standardError)")
        let root = out.appendingPathComponent("Dataset007_Synth_MSD")
        try checkNNUNetRawLayout(root, cases: 5, channels: 2)
        let header = try NIfTIHeader.read(root.appendingPathComponent("imagesTr/synth_002_0001.nii.gz").path)
        #expect(header.dimensions == [16, 16, 8])
        for (a, b) in zip(
            header.geometry.origin + header.geometry.direction + header.geometry.spacing,
            DatasetFixtures.geometry.origin + DatasetFixtures.geometry.direction
                + DatasetFixtures.geometry.spacing)
        {
            #expect(abs(a - b) < 1e-4)
        }
        let exported = try LabeledSet.open(root.path, selection: SplitSelection(preprocessedFolder: nil))
        let original = try LabeledSet.open(source.path, selection: SplitSelection(preprocessedFolder: nil))
        let (a, b) = (try exported.load("synth_002"), try original.load("synth_002"))
        #expect(a.image.values == b.image.values && a.labels.values == b.labels.values)
        #expect(try TestSupport.slicelab(["dataset", "check", root.path]).status == 0)

        let again = try TestSupport.slicelab([
            "dataset", "export", source.path, "--format", "nnunet",
            "--out", out.path, "--id", "7"
        ])
        #expect(again.status == 1 && again.standardError.contains("exists already"))

        // SliceLab's own 2-D PNG layout: train to imagesTr, test to imagesTs with labelsTs.
        let shapes = try CompareTests.makeSet(in: folder)
        let fromPNG = try TestSupport.slicelab([
            "dataset", "export", shapes.path, "--format", "nnunet",
            "--out", out.path, "--id", "12"
        ])
        #expect(fromPNG.status == 0, "\(fromPNG.standardError)")
        let pngRoot = out.appendingPathComponent("Dataset012_shapes")
        try checkNNUNetRawLayout(pngRoot, cases: 3, channels: 1)
        let tests = try FileManager.default.contentsOfDirectory(
            atPath: pngRoot.appendingPathComponent("imagesTs").path)
        #expect(tests.sorted() == ["case03_0000.nii.gz", "case04_0000.nii.gz", "case05_0000.nii.gz"])
    }

    /// The rules of nnU-Net's `verify_dataset_integrity` that do not need nnU-Net: the required keys, `numTraining`
    /// training cases, every case's channel files `_0000…` and label named with `file_ending`, labels 0, 1, 2, …
    /// with background 0, and each label's values among them.
    func checkNNUNetRawLayout(_ root: URL, cases: Int, channels: Int) throws {
        let json = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: root.appendingPathComponent("dataset.json"))) as? [String: Any])
        for key in ["labels", "channel_names", "numTraining", "file_ending"] { #expect(json[key] != nil, "\(key)") }
        #expect(json["numTraining"] as? Int == cases && json["file_ending"] as? String == ".nii.gz")
        let labels = try #require(json["labels"] as? [String: Int])
        #expect(labels["background"] == 0 && labels.values.sorted() == Array(0..<labels.count))
        #expect((json["channel_names"] as? [String: String])?.keys.sorted() == (0..<channels).map { "\($0)" })
        let fm = FileManager.default
        let labelFiles = try fm.contentsOfDirectory(atPath: root.appendingPathComponent("labelsTr").path).sorted()
        let imageFiles = try fm.contentsOfDirectory(atPath: root.appendingPathComponent("imagesTr").path).sorted()
        #expect(labelFiles.count == cases && labelFiles.allSatisfy { $0.hasSuffix(".nii.gz") })
        let expected = labelFiles.flatMap { label in
            (0..<channels).map { String(label.dropLast(7)) + String(format: "_%04d.nii.gz", $0) }
        }
        #expect(imageFiles == expected.sorted())
        for file in labelFiles {
            let values = try NIfTIImage.read(root.appendingPathComponent("labelsTr/\(file)").path).values
            #expect(Set(values.map { Int($0) }).isSubset(of: Set(labels.values)))
        }
    }

    // MARK: - 3-D metrics

    struct Goldens: Decodable {
        struct Case: Decodable {
            let `case`: String
            let classes: [String: [String: String]]
            enum CodingKeys: String, CodingKey { case `case` }
            init(from decoder: Decoder) throws {
                self.case = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .case)
                let all = try decoder.singleValueContainer().decode([String: AnyDecodable].self)
                classes = all.compactMapValues(\.table)
            }
        }
        struct AnyDecodable: Decodable {
            let table: [String: String]?
            init(from decoder: Decoder) throws {
                table = try? decoder.singleValueContainer().decode([String: String].self)
            }
        }
        let versions: [String: String]
        let cases: [Case]
    }

    /// Writes another tool's labels `<case>.nii.gz` for `cases` into `folder` and returns it.
    func writePredictions(_ cases: Range<Int>, into folder: URL) throws -> URL {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for k in cases {
            try NIfTIImage.write(
                .labels(DatasetFixtures.prediction(k)), dimensions: DatasetFixtures.dimensions,
                geometry: DatasetFixtures.geometry,
                to: folder.appendingPathComponent("\(DatasetFixtures.caseName(k)).nii.gz").path)
        }
        return folder
    }

    /// The metrics of a results file's run: per metric, [case][class].
    func runMetrics(_ path: String, run: String, metrics: [String]) throws -> [String: [[Double]]] {
        let file = try HDF5File.open(path)
        var result: [String: [[Double]]] = [:]
        for metric in metrics {
            let values = try file.read("/runs/\(run)/metrics/\(metric)", as: Double.self).values
            result[metric] = stride(from: 0, to: values.count, by: 3).map { Array(values[$0..<($0 + 3)]) }
        }
        return result
    }

    /// `evaluate` on NIfTI volumes with spacing (3, 0.75, 1.25) mm gives medpy 0.5.2's Dice, HD, HD95 (pooled)
    /// and ASSD per case in 3-D (1e-9 relative: both are exact Euclidean distance transforms in float64).
    @Test func evaluateOnVolumesMatchesMedpyPerCaseIn3D() throws {
        let goldens = try JSONDecoder().decode(Goldens.self, from: Data(contentsOf: Self.goldensURL))
        let folder = try TestSupport.temporaryFolder()
        let root = try DatasetFixtures.makeNNUNet(in: folder, channels: 1)
        let predictions = try writePredictions(0..<4, into: folder.appendingPathComponent("predictions"))
        let results = folder.appendingPathComponent("results.h5").path
        let run = try TestSupport.slicelab([
            "evaluate", "--pred", predictions.path, "--ref",
            root.appendingPathComponent("labelsTr").path, "--num-classes", "3",
            "--hd95", "pooled", "--out", results, "--run", "tool"
        ])
        #expect(run.status == 0, "\(run.standardError)")
        // The set itself as the reference: its labelsTr, its class names, the cases the folder holds.
        try FileManager.default.removeItem(at: predictions.appendingPathComponent("case_000.nii.gz"))
        let bySet = try TestSupport.slicelab([
            "evaluate", "--pred", predictions.path, "--ref", root.path,
            "--hd95", "pooled", "--out", results, "--run", "subset"
        ])
        #expect(bySet.status == 0, "\(bySet.standardError)")
        let file = try HDF5File.open(results)
        #expect(try file.readStrings("/runs/subset/class_names") == ["background", "sphere", "box"])
        #expect(try file.readStrings("/runs/subset/case_ids") == ["case_001", "case_002", "case_003"])
        let subset = try runMetrics(results, run: "subset", metrics: ["hd95"])["hd95"]!
        let names = ["dice", "hd", "hd95", "assd"]
        let values = try runMetrics(results, run: "tool", metrics: names)
        #expect(subset == Array(values["hd95"]!.dropFirst()))
        #expect(goldens.cases.count == 4)
        for (k, golden) in goldens.cases.enumerated() {
            for c in 1...2 {
                for name in names {
                    let expected = try #require(Double(golden.classes["\(c)"]?[name] ?? ""))
                    let value = values[name]![k][c]
                    #expect(abs(value - expected) <= 1e-9 * max(1, abs(expected)), "\(golden.case) class \(c) \(name)")
                }
            }
        }
    }

    /// `compare --external` scores another tool's NIfTI predictions on fold 0's val cases with the same 3-D metrics
    /// (medpy's Dice, HD, ASSD), pairs them with the model's run, records the split, and `--predictions` writes
    /// each run's volumes with the cases' geometry.
    @Test func compareScoresAnExternalRunAndWritesPredictionVolumes() throws {
        let goldens = try JSONDecoder().decode(Goldens.self, from: Data(contentsOf: Self.goldensURL))
        let folder = try TestSupport.temporaryFolder()
        let root = try DatasetFixtures.makeNNUNet(in: folder, channels: 1)
        try DatasetFixtures.writeSplits([(["case_000", "case_001"], ["case_002", "case_003"])], in: root)
        let external = try writePredictions(2..<4, into: folder.appendingPathComponent("nnunet_fold0"))
        try Data("{}".utf8).write(to: external.appendingPathComponent("plans.json"))  // as nnU-Net leaves it
        let model = try CompareTests.makeModel(in: folder)
        let results = folder.appendingPathComponent("results.h5").path
        let written = folder.appendingPathComponent("predictions")
        let run = try TestSupport.slicelab([
            "compare", root.path, "--model", model, "--classical",
            "kmeans:space=gray,map=train-vote", "--external",
            "nnunet=\(external.path)", "--predictions", written.path, "--out", results
        ])
        #expect(run.status == 0, "\(run.standardError)")
        let file = try HDF5File.open(results)
        #expect(try file.children(of: "/runs").sorted() == ["deeplabv3", "kmeans-gray-train-vote", "nnunet"])
        #expect(try file.readStrings("/runs/nnunet/case_ids") == ["case_002", "case_003"])
        #expect(try file.attribute("method", at: "/runs/nnunet").stringValue == "external")
        let split = try file.attribute("split", at: "/runs/nnunet").stringValue ?? ""
        #expect(split.contains("splits_final.json") && split.contains("\"fold\":0"))
        #expect(try file.children(of: "/comparisons").contains { $0.contains("nnunet") })
        let values = try runMetrics(results, run: "nnunet", metrics: ["dice", "hd", "assd"])
        for (row, k) in [2, 3].enumerated() {
            for c in 1...2 {
                for name in ["dice", "hd", "assd"] {
                    let expected = try #require(Double(goldens.cases[k].classes["\(c)"]?[name] ?? ""))
                    #expect(abs(values[name]![row][c] - expected) <= 1e-9 * max(1, abs(expected)), "case \(k) \(name)")
                }
            }
        }
        for runName in ["deeplabv3", "kmeans-gray-train-vote", "nnunet"] {
            let path = written.appendingPathComponent("\(runName)/case_003.nii.gz").path
            let image = try NIfTIImage.read(path)
            #expect(image.dimensions == [16, 16, 8], "\(runName)")
            for (a, b) in zip(
                image.geometry.origin + image.geometry.spacing,
                DatasetFixtures.geometry.origin + DatasetFixtures.geometry.spacing)
            {
                #expect(abs(a - b) < 1e-4)
            }
            if runName == "nnunet" { #expect(image.values.map { Int32($0) } == DatasetFixtures.prediction(3)) }
        }

        try FileManager.default.removeItem(at: external.appendingPathComponent("case_003.nii.gz"))
        let missing = try TestSupport.slicelab([
            "compare", root.path, "--model", model, "--classical",
            "kmeans:space=gray,map=train-vote", "--external",
            "nnunet=\(external.path)", "--out", results, "--overwrite"
        ])
        #expect(missing.status == 1)
        #expect(
            missing.standardError.contains("error: --external nnunet=")
                && missing.standardError.contains("case_003"),
            "\(missing.standardError)")
    }
}
