import Foundation
import ImageFiles
import Metrics
import SliceLabIO
import SliceLabKit
import SliceLabResults
import SliceLabSupport
import TestSupport
import Testing

/// `slicelab evaluate` end to end, and the results-file layout read back with h5py.
@Suite struct EvaluateTests {
    /// Writes reference and prediction label maps for two 3-D cases and one 2-D PNG pair into two folders.
    static func makeFolders() throws -> (folder: URL, predictions: String, references: String) {
        let folder = try TestSupport.temporaryFolder("slicelab-evaluate")
        try TestSupport.runPython(
            """
            import sys, os, h5py, numpy as np
            root = sys.argv[1]
            for sub in ("pred", "ref"):
                os.makedirs(os.path.join(root, sub), exist_ok=True)
            rng = np.random.default_rng(4)
            for case in ("case_a", "case_b"):
                r = np.zeros((6, 20, 24), np.uint8); r[1:5, 3:12, 4:15] = 1; r[2:4, 14:18, 16:22] = 2
                p = r.copy(); flips = rng.integers(0, r.size, 40); p.flat[flips] = rng.integers(0, 3, 40)
                for sub, a in (("ref", r), ("pred", p)):
                    with h5py.File(os.path.join(root, sub, case + ".h5"), "w") as f:
                        f.create_dataset("labels", data=a).attrs["spacing"] = [2.5, 0.8, 0.8]
            """, arguments: [folder.path])
        let r = (0..<(20 * 24)).map { UInt8(($0 / 24 > 5 && $0 / 24 < 14 && $0 % 24 > 3 && $0 % 24 < 12) ? 1 : 0) }
        var p = r
        p[100] = 1
        p[8 * 24 + 6] = 0
        try PNGImage(rows: 20, columns: 24, channels: 1, samples: r)
            .write(to: folder.appendingPathComponent("ref/slice_c.png").path)
        try PNGImage(rows: 20, columns: 24, channels: 1, samples: p)
            .write(to: folder.appendingPathComponent("pred/slice_c.png").path)
        return (folder, folder.appendingPathComponent("pred").path, folder.appendingPathComponent("ref").path)
    }

    @Test func foldersArePairedByStemAndTheFileHoldsTheContractLayout() throws {
        let (folder, predictions, references) = try Self.makeFolders()
        let out = folder.appendingPathComponent("results.h5").path
        let result = try TestSupport.slicelab([
            "evaluate", "--pred", predictions, "--ref", references, "--out", out,
            "--class-names", "background,liver,tumor", "--run", "unet",
            "--tolerance", "1.5", "--hd95", "pooled"
        ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("liver") && result.standardOutput.contains("foreground"))
        #expect(result.standardOutput.contains("Dice") && result.standardOutput.contains("HD95"))
        let report = try TestSupport.runPython(
            """
            import sys, json, h5py, numpy as np
            f = h5py.File(sys.argv[1], "r")
            g = f["runs/unet"]
            for a in ["method", "model", "dataset", "created", "software_version", "config", "hd95_definition",
                      "empty_rule"]:
                assert a in g.attrs, a
            assert g.attrs["hd95_definition"] == "pooled" and g.attrs["empty_rule"] == "nan"
            json.loads(g.attrs["config"])
            from datetime import datetime; datetime.fromisoformat(g.attrs["created"])
            ids = [s.decode() for s in g["case_ids"][()]]
            assert ids == ["case_a", "case_b", "slice_c"], ids
            assert [s.decode() for s in g["class_names"][()]] == ["background", "liver", "tumor"]
            assert g["spacing"].dtype == np.float64 and g["spacing"].shape == (3, 3)
            assert list(g["spacing"][0]) == [2.5, 0.8, 0.8] and list(g["spacing"][2]) == [1, 1, 1]
            names = ["dice", "iou", "precision", "recall", "specificity", "accuracy", "volume_similarity",
                     "volume_ref_ml", "volume_pred_ml", "hd", "hd95", "assd", "nsd"]
            assert sorted(g["metrics"].keys()) == sorted(names)
            for n in names:
                assert g["metrics"][n].dtype == np.float64 and g["metrics"][n].shape == (3, 3), n
                s = g["summary"][n]
                assert s.dtype == np.float64 and s.shape == (3, 6), n
                m = g["metrics"][n][()]
                for c in range(3):
                    v = m[:, c][~np.isnan(m[:, c])]
                    assert s[c, 5] == len(v)
                    if len(v) and np.all(np.isfinite(v)):
                        assert abs(s[c, 0] - v.mean()) < 1e-12 and abs(s[c, 2] - np.median(v)) < 1e-12
                        if len(v) > 1: assert abs(s[c, 1] - v.std(ddof=1)) < 1e-12
                        assert s[c, 3] <= s[c, 0] <= s[c, 4]
            c = g["confusion"]
            assert c.dtype == np.int64 and c.shape == (3, 3, 3)
            assert c[2].sum() == 20 * 24 and c[0].sum() == 6 * 20 * 24
            d = g["metrics/dice"][()]
            tp = np.array([[c[k, j, j] for j in range(3)] for k in range(3)])
            ref = c[()].sum(axis=2); pred = c[()].sum(axis=1)
            expected = np.where(ref > 0, 2 * tp / np.maximum(ref + pred, 1), np.nan)
            assert np.allclose(d, expected, equal_nan=True, rtol=0, atol=1e-15)
            assert np.isnan(d[2, 2])  # slice_c has no class 2: empty reference -> NaN
            vol = g["metrics/volume_ref_ml"][()]
            assert abs(vol[0, 1] - ref[0, 1] * 2.5 * 0.8 * 0.8 / 1000) < 1e-15
            print("ok", g["summary/dice"].attrs["foreground_mean"])
            """, arguments: [out])
        #expect(report.hasPrefix("ok"), "\(report)")
    }

    /// `--lesion-classes` (by name or label value) adds the lesion-wise metrics for those classes (NaN for the
    /// others), records them, and prints a lesion table; without it the metrics are absent; an unknown class is one
    /// line naming it, and nothing is written.
    @Test func lesionClassesAddLesionWiseMetrics() throws {
        let (folder, predictions, references) = try Self.makeFolders()
        let out = folder.appendingPathComponent("results.h5").path
        let names = ["--class-names", "background,liver,tumor"]
        let scored = try TestSupport.slicelab(
            [
                "evaluate", "--pred", predictions, "--ref", references, "--out", out, "--run", "lesions",
                "--lesion-classes", "tumor,1"
            ] + names)
        #expect(scored.status == 0, "\(scored.standardError)")
        #expect(scored.standardOutput.contains("lesion Dice") && scored.standardOutput.contains("PQ"))
        let plain = try TestSupport.slicelab(
            ["evaluate", "--pred", predictions, "--ref", references, "--out", out, "--run", "plain"] + names)
        #expect(plain.status == 0 && !plain.standardOutput.contains("lesion Dice"), "\(plain.standardOutput)")
        let report = try TestSupport.runPython(
            """
            import sys, h5py, numpy as np
            f = h5py.File(sys.argv[1], "r")
            g = f["runs/lesions"]
            assert list(g.attrs["lesion_classes"]) == [1, 2], g.attrs["lesion_classes"]
            names = ["lesion_dice", "lesion_hd95", "lesion_sensitivity", "lesion_precision", "lesion_f1",
                     "panoptic_quality"]
            for name in names:
                values = g["metrics/" + name][()]
                assert values.shape == (3, 3), (name, values.shape)
                assert np.isnan(values[:, 0]).all(), name
                assert np.isfinite(values[:2, 1:]).all(), (name, values)
            assert not any(n in f["runs/plain/metrics"] for n in names)
            assert "lesion_classes" not in f["runs/plain"].attrs
            print("ok")
            """, arguments: [out])
        #expect(report.contains("ok"))
        let bad = try TestSupport.slicelab(
            [
                "evaluate", "--pred", predictions, "--ref", references, "--out", out, "--run", "bad",
                "--lesion-classes", "vessel"
            ] + names)
        #expect(bad.status != 0 && bad.standardError.contains("'vessel' is not a foreground class"))
        #expect(bad.standardError.split(separator: "\n").count == 1, "\(bad.standardError)")
    }

    /// `--prob` (segment's `/probabilities`) adds the per-class calibration metrics, recorded with their bins,
    /// and prints them; probabilities of another shape are one line naming the file.
    @Test func probabilitiesAddCalibrationMetrics() throws {
        let folder = try TestSupport.temporaryFolder("slicelab-evaluate")
        defer { try? FileManager.default.removeItem(at: folder) }
        let demo = TestSupport.packageRoot.appendingPathComponent("Sources/SliceLabKit/Resources/Demo")
        let prediction = folder.appendingPathComponent("axial035.h5").path
        let segment = try TestSupport.slicelab([
            "segment", demo.appendingPathComponent("mni-brain/images/axial035.dcm").path,
            "--model", demo.appendingPathComponent("models/mni-brain.h5").path, "--probabilities", "--out", prediction
        ])
        #expect(segment.status == 0, "\(segment.standardError)")
        let out = folder.appendingPathComponent("results.h5").path
        let reference = demo.appendingPathComponent("mni-brain/labels/axial035.png").path
        let result = try TestSupport.slicelab([
            "evaluate", "--pred", prediction, "--ref", reference, "--prob", prediction, "--out", out
        ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("ECE (15 bins)") && result.standardOutput.contains("entropy AUROC"))
        let report = try TestSupport.runPython(
            """
            import sys, h5py, numpy as np
            g = h5py.File(sys.argv[1], "r")["runs/axial035"]
            assert int(g.attrs["calibration_bins"]) == 15
            for name in ["ece", "brier", "nll", "entropy_error_auroc"]:
                v = g["metrics/" + name][()]
                assert v.shape == (1, 3) and np.isfinite(v).all(), (name, v)
            auroc = g["metrics/entropy_error_auroc"][()]
            assert (auroc > 0.6).all(), auroc  # better than chance: the bundled model is unsure where it is wrong
            print("ok")
            """, arguments: [out])
        #expect(report.contains("ok"))
        let wrong = try TestSupport.slicelab([
            "evaluate", "--pred", prediction, "--ref", reference, "--prob", reference, "--out", out, "--run", "bad"
        ])
        #expect(wrong.status != 0 && wrong.standardError.contains(reference), "\(wrong.standardError)")
    }

    @Test func addingARunKeepsTheOthersAndTheSameNameIsRefusedUnlessOverwrite() throws {
        let (folder, predictions, references) = try Self.makeFolders()
        let out = folder.appendingPathComponent("results.h5").path
        for run in ["first", "second"] {
            let result = try TestSupport.slicelab([
                "evaluate", "--pred", predictions, "--ref", references, "--out", out,
                "--run", run
            ])
            #expect(result.status == 0, "\(result.standardError)")
        }
        #expect(try ResultsFile.runNames(in: out) == ["first", "second"])
        let before = try Data(contentsOf: URL(fileURLWithPath: out))
        let again = try TestSupport.slicelab([
            "evaluate", "--pred", predictions, "--ref", references, "--out", out,
            "--run", "first", "--empty", "one"
        ])
        #expect(again.status == 1)
        #expect(again.standardError.contains("'first' already exists"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == before)
        let replaced = try TestSupport.slicelab([
            "evaluate", "--pred", predictions, "--ref", references, "--out", out,
            "--run", "first", "--empty", "one", "--overwrite"
        ])
        #expect(replaced.status == 0, "\(replaced.standardError)")
        #expect(try ResultsFile.runNames(in: out) == ["first", "second"])
        #expect(try ResultsFile.readRun("first", from: out).settings.empty == .one)
        // With `--empty one`, slice_c's absent tumour class (both empty) scores Dice 1.
        let first = try ResultsFile.readRun("first", from: out)
        #expect(first.values(.dice, classIndex: 2)[2] == 1)
        #expect(try ResultsFile.readRun("second", from: out).values(.dice, classIndex: 2)[2].isNaN)
    }

    @Test func badInputsNameTheCaseAndWriteNothing() throws {
        let (folder, predictions, references) = try Self.makeFolders()
        let out = folder.appendingPathComponent("results.h5").path
        func evaluate(_ extra: [String] = [], pred: String = predictions) throws -> TestSupport.ProcessResult {
            try TestSupport.slicelab(["evaluate", "--pred", pred, "--ref", references, "--out", out] + extra)
        }
        // Labels ≥ K.
        var result = try evaluate(["--num-classes", "2"])
        #expect(
            result.status == 1 && result.standardError.contains("case 'case_a'")
                && result.standardError.contains("label 2"), "\(result.standardError)")
        // Unpaired files.
        try FileManager.default.copyItem(atPath: predictions + "/case_a.h5", toPath: predictions + "/extra.h5")
        result = try evaluate()
        #expect(result.status == 1 && result.standardError.contains("extra"), "\(result.standardError)")
        try FileManager.default.removeItem(atPath: predictions + "/extra.h5")
        // Mismatched shapes.
        try PNGImage(rows: 21, columns: 24, channels: 1, samples: [UInt8](repeating: 0, count: 21 * 24))
            .write(to: predictions + "/slice_c.png")
        result = try evaluate()
        #expect(
            result.status == 1 && result.standardError.contains("case 'slice_c'")
                && result.standardError.contains("shape"), "\(result.standardError)")
        // Class names against --num-classes, and a bad option value.
        result = try evaluate(["--num-classes", "3", "--class-names", "a,b"])
        #expect(result.status == 1 && result.standardError.contains("--class-names"))
        result = try evaluate(["--hd95", "median"])
        #expect(result.status == 2)
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func comparisonsOfTwoRunsAreWrittenWithTheWriterAPI() throws {
        let (folder, predictions, references) = try Self.makeFolders()
        let out = folder.appendingPathComponent("results.h5").path
        let a = try EvaluateWorkflow.run(
            .init(prediction: predictions, reference: references, output: out, runName: "a"),
            showProgress: false)
        let b = try EvaluateWorkflow.run(
            .init(prediction: references, reference: references, output: out, runName: "b"),
            showProgress: false)
        try ResultsFile.write(runs: [], comparisons: [try ResultsComparison(a, b, seed: 7)], to: out)
        let report = try TestSupport.runPython(
            """
            import sys, h5py, numpy as np
            f = h5py.File(sys.argv[1], "r")
            assert sorted(f["runs"].keys()) == ["a", "b"]
            d = f["comparisons/a__b/dice"]
            assert d.dtype == np.float64 and d.shape == (3, 4)
            diff = f["runs/a/metrics/dice"][()] - f["runs/b/metrics/dice"][()]
            for c in range(3):
                v = diff[:, c][~np.isnan(diff[:, c])]
                assert abs(d[c, 0] - v.mean()) < 1e-12 and d[c, 1] <= d[c, 0] <= d[c, 2]
            assert np.all(diff[:, 1] < 0)
            # The notebooks' contract checker (Notebooks/slicelab_files.py) accepts the file.
            sys.path.insert(0, sys.argv[2])
            import slicelab_files
            runs = slicelab_files.check_results_file(sys.argv[1])
            assert runs == {"a": {"cases": 3, "classes": 3}, "b": {"cases": 3, "classes": 3}}, runs
            print("ok")
            """, arguments: [out, TestSupport.packageRoot.appendingPathComponent("Notebooks").path])
        #expect(report.hasPrefix("ok"))
    }

    @Test func predictedLabelMapsAreStoredChunkedAndCompressedAndRunNamesAreChecked() throws {
        let folder = try TestSupport.temporaryFolder("slicelab-results")
        let out = folder.appendingPathComponent("results.h5").path
        let reference = LabelMap(
            frames: 2, rows: 3, columns: 4, labels: (0..<24).map { Int32($0 % 3) },
            spacing: [2, 0.5, 0.5])
        let prediction = LabelMap(
            frames: 2, rows: 3, columns: 4, labels: (0..<24).map { Int32(($0 + 1) % 3) },
            spacing: [2, 0.5, 0.5])
        let settings = EvaluationSettings(classCount: 3)
        let metrics = try CaseMetrics(
            reference: LabelGrid(
                shape: [2, 3, 4], spacing: [2, 0.5, 0.5],
                labels: reference.labels.map { UInt16($0) }),
            prediction: LabelGrid(
                shape: [2, 3, 4], spacing: [2, 0.5, 0.5],
                labels: prediction.labels.map { UInt16($0) }),
            settings: settings)
        let run = try ResultsRun(
            name: "model", method: "deeplabv3", model: "m.h5", dataset: "set", settings: settings,
            classNames: ["bg", "a", "b"], cases: [("c1", [2, 0.5, 0.5], metrics)],
            labels: ["c1": prediction], bootstrapSeed: 42)
        try ResultsFile.write(runs: [run], to: out)
        let report = try TestSupport.runPython(
            """
            import sys, h5py, numpy as np
            f = h5py.File(sys.argv[1], "r")
            d = f["runs/model/labels/c1"]
            assert d.dtype == np.uint8 and d.shape == (2, 3, 4) and d.chunks is not None and d.compression == "gzip"
            assert (d[()].ravel() == (np.arange(24) + 1) % 3).all()
            assert f["runs/model"].attrs["bootstrap_seed"] == 42
            print("ok")
            """, arguments: [out])
        #expect(report.hasPrefix("ok"))
        #expect(try ResultsFile.readRun("model", from: out).bootstrapSeed == 42)
        #expect(throws: ResultsError.invalidRunName("a/b")) {
            try ResultsRun(
                name: "a/b", method: "m", dataset: "d", settings: settings, classNames: ["bg", "a", "b"],
                cases: [])
        }
        #expect(throws: ResultsError.missingRun(file: out, run: "other")) {
            try ResultsFile.readRun("other", from: out)
        }
    }
}
