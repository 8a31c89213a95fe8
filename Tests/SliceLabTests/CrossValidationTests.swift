import Foundation
import TestSupport
import Testing

/// `train --fold K|all --out OUT/`: one model per fold, each fold's validation cases scored, folds trained apart
/// joined into OUT/crossval.h5 (each fold's run and every case once in the pooled run).
@Suite(.serialized) struct CrossValidationTests {
    static let arguments = [
        "--arch", "deeplabv3_mobilenet_v2", "--num-classes", "3", "--steps", "1", "--batch", "2", "--crop", "16",
        "--aspp-channels", "16"
    ]

    @Test func foldsTrainApartAndJoin() throws {
        let folder = try TestSupport.temporaryFolder("crossval")
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try DatasetFixtures.makeNNUNet(in: folder, count: 4, channels: 1)
        try DatasetFixtures.writeSplits(
            [
                (["case_000", "case_001"], ["case_002", "case_003"]),
                (["case_002", "case_003"], ["case_000", "case_001"])
            ],
            in: root)
        let out = folder.appendingPathComponent("cv").path + "/"
        let first = try TestSupport.slicelab(["train", root.path, "--fold", "1", "--out", out] + Self.arguments)
        #expect(first.status == 0, "\(first.standardError)")
        #expect(!FileManager.default.fileExists(atPath: out + "crossval.h5"), "one fold does not join")
        let all = try TestSupport.slicelab(
            ["train", root.path, "--fold", "all", "--out", out, "--post", "auto", "--report", out + "report"]
                + Self.arguments)
        #expect(all.status == 0, "\(all.standardError)")
        #expect(all.standardError.contains("fold 1: kept"), "the fold trained apart is kept")
        #expect(all.standardOutput.contains("run 'crossval': 4 case(s)"), "\(all.standardOutput)")
        let report = try TestSupport.runPython(
            """
            import sys, json, h5py, numpy as np
            out = sys.argv[1]
            f = h5py.File(out + "crossval.h5", "r")
            assert sorted(f["runs"].keys()) == ["crossval", "crossval.auto", "fold_0", "fold_1"], list(f["runs"].keys())
            assert "crossval__crossval.auto" in f["comparisons"], list(f["comparisons"].keys())
            choice = json.load(open(out + "postprocessing.json"))
            assert json.loads(f["runs/crossval.auto"].attrs["postprocessing"]) == choice
            assert choice["method"] == "auto" and choice["significance"] == 0.05 and choice["split"] == "val of 2 folds"
            assert sorted(choice["classes"]) == ["1", "2"] and "rules" in choice["whole_map"], choice
            assert "iterations" in choice["crf"], choice
            ids = lambda g: [x.decode() for x in g["case_ids"][()]]
            assert ids(f["runs/fold_0"]) == ["case_002", "case_003"] and ids(f["runs/fold_1"]) == ["case_000", "case_001"]
            assert ids(f["runs/crossval"]) == ["case_002", "case_003", "case_000", "case_001"]
            for name in f["runs/crossval/metrics"]:
                pooled = f["runs/crossval/metrics/" + name][()]
                joined = np.concatenate([f["runs/fold_0/metrics/" + name][()], f["runs/fold_1/metrics/" + name][()]])
                assert np.array_equal(pooled, joined, equal_nan=True), name
            for k in (0, 1):
                model = h5py.File(out + f"fold_{k}/model.h5", "r")
                assert model.attrs["format"] == "slicelab-deeplabv3"
                assert h5py.File(out + f"fold_{k}/validation.h5", "r")[f"runs/fold_{k}"].attrs["method"] == "deeplabv3"
            print("ok")
            """, arguments: [out])
        #expect(report.contains("ok"))
        #expect(all.standardOutput.contains("post-processing (\(out)postprocessing.json): whole map:"))
        let html = try String(contentsOfFile: out + "report/index.html", encoding: .utf8)
        for name in ["crossval", "crossval.auto", "fold_0", "fold_1"] {
            #expect(html.contains("<td>\(name)</td>"), "the report's table lacks \(name)")
        }
        #expect(html.contains("<h2>Folds</h2>") && !html.contains("Cases, worst to best"))
        let image = root.appendingPathComponent("imagesTr/case_000_0000.nii.gz").path
        let labels = folder.appendingPathComponent("auto.h5").path
        let segment = try TestSupport.slicelab([
            "segment", image, "--model", out, "--regularize", "auto", "--out", labels
        ])
        #expect(
            segment.status == 0 && segment.standardError.contains("chosen on \(out)'s cross-validation"),
            "\(segment.standardError)")
        let single = try TestSupport.slicelab([
            "segment", image, "--model", out + "fold_0/model.h5", "--regularize", "auto", "--out", labels
        ])
        #expect(
            single.status == 2 && single.standardError.contains("no --model is such a folder"),
            "\(single.standardError)")
    }

    @Test func foldsNeedAFolderAndASetWithFolds() throws {
        let folder = try TestSupport.temporaryFolder("crossval")
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try DatasetFixtures.makeNNUNet(in: folder, count: 4, channels: 1)
        let file = try TestSupport.slicelab(
            ["train", root.path, "--fold", "all", "--out", folder.appendingPathComponent("m.h5").path]
                + Self.arguments)
        #expect(file.status == 2 && file.standardError.contains("give --out a folder"), "\(file.standardError)")
        let word = try TestSupport.slicelab(
            ["train", root.path, "--fold", "some", "--out", folder.path + "/"] + Self.arguments)
        #expect(word.status == 2 && word.standardError.contains("--fold"), "\(word.standardError)")
        let post = try TestSupport.slicelab(
            ["train", root.path, "--fold", "1", "--post", "auto", "--out", folder.path + "/"] + Self.arguments)
        #expect(post.status == 2 && post.standardError.contains("add --fold all"), "\(post.standardError)")
    }

    /// SliceLab's own layout: `--fold` pools its train and val cases into nnU-Net's seeded 5-fold split and keeps
    /// its test cases held out.
    @Test func ownLayoutFoldsPoolTrainAndValAndHoldOutTest() throws {
        let folder = try TestSupport.temporaryFolder("crossval-own")
        defer { try? FileManager.default.removeItem(at: folder) }
        let own = folder.appendingPathComponent("own")
        try TrainToySet.write(to: own, trainCases: 5, validationCases: 2, size: 16)
        let description = own.appendingPathComponent("dataset.json")
        var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: description)) as? [String: Any])
        json["splits"] = ["train": (0..<5).map { String(format: "toy%03d", $0) }, "val": ["toy005"], "test": ["toy006"]]
        try JSONSerialization.data(withJSONObject: json).write(to: description)
        let out = folder.appendingPathComponent("cv").path + "/"
        let run = try TestSupport.slicelab(["train", own.path, "--fold", "all", "--out", out] + Self.arguments)
        #expect(run.status == 0, "\(run.standardError)")
        let check = try TestSupport.runPython(
            """
            import sys, h5py
            f = h5py.File(sys.argv[1] + "crossval.h5", "r")
            ids = lambda run: [x.decode() for x in f["runs/" + run + "/case_ids"][()]]
            folds = [ids(f"fold_{k}") for k in range(5)]
            assert sorted(sum(folds, [])) == [f"toy{i:03d}" for i in range(6)], folds
            assert all(len(fold) >= 1 for fold in folds) and sorted(ids("crossval")) == sorted(sum(folds, []))
            print("ok")
            """, arguments: [out])
        #expect(check.contains("ok"))
    }
}
