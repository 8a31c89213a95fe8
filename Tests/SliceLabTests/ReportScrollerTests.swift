import DeepLab
import Foundation
import ImageFiles
import TestSupport
import Testing

@testable import SliceLabIO
@testable import SliceLabKit
@testable import SliceLabResults

/// The HTML report's 3-D slice scroller (issue #18): its sprites, its size policy, and the page driven in
/// headless Chromium by `Fixtures/drive_scroller.py`.
@Suite struct ReportScrollerTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/drive_scroller.py").path
    static let chromium = "/usr/bin/chromium"

    /// Tile i of each sprite is shown slice i: the image sprite holds that slice's (reduced) pixels, an overlay
    /// sprite the class tint at full alpha where the label is set and nothing elsewhere.
    @Test func spritesHoldEachShownSliceAtItsTile() throws {
        let (frames, rows, columns) = (5, 6, 4)
        var values = [Float]()
        var labels = [Int32]()
        for z in 0..<frames {
            for y in 0..<rows {
                for x in 0..<columns {
                    values.append(Float(z * 100))
                    labels.append(y == z && x == 1 ? 2 : 0)
                }
            }
        }
        let image = ScanImage(
            frames: frames, rows: rows, columns: columns, channels: 1, values: values,
            spacing: [3, 1, 2], source: "volume")
        let map = LabelMap(frames: frames, rows: rows, columns: columns, labels: labels)
        let scroller = try SliceScroller(caseID: "c", image: image, layers: [("reference", map)])
        #expect(scroller.sliceIndices == [0, 1, 2, 3, 4] && scroller.reduction == 1)
        #expect(scroller.gridColumns == 3 && scroller.tileRows == rows && scroller.tileColumns == columns)
        #expect(abs(scroller.aspect - 6.0 / 8.0) < 1e-12)
        let folder = try TestSupport.temporaryFolder()
        func decode(_ data: Data, _ name: String) throws -> PNGImage {
            let path = folder.appendingPathComponent(name).path
            try data.write(to: URL(fileURLWithPath: path))
            return try PNGImage.read(path)
        }
        let gray = try decode(scroller.image, "image.png")
        let tint = try decode(scroller.layers[0].sprite, "layer.png")
        #expect(gray.rows == 2 * rows && gray.columns == 3 * columns && gray.channels == 1)
        #expect(tint.channels == 4)
        let (graySamples, tintSamples) = (gray.intSamples, tint.intSamples)
        let color = Overlay.color(ofClass: 2)
        var brightness: [Int] = []
        for tile in 0..<frames {
            let (top, left) = (tile / 3 * rows, tile % 3 * columns)
            brightness.append(graySamples[top * gray.columns + left])
            for y in 0..<rows {
                for x in 0..<columns {
                    let pixel = (top + y) * tint.columns + left + x
                    let rgba = Array(tintSamples[(pixel * 4)..<(pixel * 4 + 4)])
                    let expected =
                        y == tile && x == 1
                        ? [Int(color.0), Int(color.1), Int(color.2), 255] : [0, 0, 0, 0]
                    #expect(rgba == expected, "tile \(tile) y \(y) x \(x)")
                }
            }
        }
        #expect(brightness == brightness.sorted() && brightness.first! < brightness.last!, "\(brightness)")
    }

    /// Long or large volumes are reduced as the policy says: evenly spaced slices (the first and last kept),
    /// an integer in-plane factor, and a pixel cost the report budgets with.
    @Test func policyLimitsSlicesAndResolution() throws {
        let policy = SliceScroller.Policy(maxCases: 2, maxSlices: 4, maxSide: 8, maxTotalPixels: 100)
        #expect(policy.shownSlices(frames: 10) == [0, 3, 6, 9])
        #expect(policy.shownSlices(frames: 3) == [0, 1, 2])
        #expect(policy.reduction(rows: 20, columns: 7) == 3)
        #expect(policy.pixelCost(frames: 10, rows: 20, columns: 7) == 4 * 7 * 3)
        let image = ScanImage(
            frames: 10, rows: 20, columns: 7, channels: 1,
            values: (0..<1400).map { Float($0 % 97) }, source: "big")
        let map = LabelMap(frames: 10, rows: 20, columns: 7, labels: [Int32](repeating: 1, count: 1400))
        let scroller = try SliceScroller(caseID: "big", image: image, layers: [("reference", map)], policy: policy)
        #expect(scroller.sliceIndices == [0, 3, 6, 9] && scroller.tileRows == 7 && scroller.tileColumns == 3)
        let wrong = LabelMap(frames: 10, rows: 20, columns: 6, labels: [Int32](repeating: 1, count: 1200))
        #expect(throws: InputError.self) {
            try SliceScroller(caseID: "big", image: image, layers: [("deeplabv3", wrong)], policy: policy)
        }
    }

    /// The report gives scrollers to 3-D cases in its worst-to-best order until the case limit or the pixel
    /// budget is reached, says so above the cases, and keeps the static figures for the rest and for 2-D cases.
    @Test func reportBudgetsScrollersWorstFirst() throws {
        let shapes = [(4, 5, 6), (1, 5, 6), (4, 5, 6), (4, 5, 6)]  // case 1 is a 2-D case
        let dice: [[Double]] = [[1, 0.9], [1, 0.1], [1, 0.5], [1, 0.2]]  // worst first: c1, c3, c2, c0
        let caseIDs = (0..<4).map { "c\($0)" }
        let images = shapes.map { frames, rows, columns in
            ScanImage(
                frames: frames, rows: rows, columns: columns, channels: 1,
                values: (0..<(frames * rows * columns)).map { Float($0) }, source: "v")
        }
        let maps = shapes.map { frames, rows, columns in
            LabelMap(
                frames: frames, rows: rows, columns: columns,
                labels: [Int32](repeating: 1, count: frames * rows * columns))
        }
        let picture = try PNGImage(rows: 1, columns: 1, channels: 3, samples: [UInt8](repeating: 9, count: 3))
            .encoded()
        var report = HTMLReport(
            title: "t", classNames: ["background", "thing"], caseIDs: caseIDs,
            methods: [
                HTMLReport.Method(
                    name: "deeplabv3", dice: dice, iou: dice, hd95: dice,
                    pValues: nil)
            ],
            pictures: caseIDs.map {
                HTMLReport.CasePictures(
                    caseID: $0, image: picture, reference: picture,
                    methods: [picture])
            })
        #expect(report.caseOrder() == ["c1", "c3", "c2", "c0"])
        let policy = SliceScroller.Policy(maxCases: 8, maxSlices: 128, maxSide: 192, maxTotalPixels: 2 * 4 * 30)
        try CompareWorkflow.addScrollers(
            to: &report, runNames: ["deeplabv3"], images: images, references: maps,
            predictions: [maps], policy: policy)
        #expect(report.scrollers.map(\.caseID) == ["c3", "c2"])
        #expect(report.scrollers.allSatisfy { $0.layers.map(\.name) == ["reference", "deeplabv3"] })
        #expect(report.scrollerNote?.hasPrefix("Slice scrollers for 2 of 3 3-D cases") == true)
        #expect(report.scrollerNote?.contains("the others show their middle slice") == true)
        let html = report.html()
        #expect(html.components(separatedBy: "<div class=\"scroller\"").count - 1 == 2)
        #expect(html.components(separatedBy: "<figure>").count - 1 == 2 * 3, "c1 and c0 keep static figures")
        #expect(html.contains("Dice 0.2") && html.contains("<script>"))
    }

    /// `compare --report` on a 3-D nnU-Net set (a small seeded MobileNetV2 model: the page is under test, not
    /// accuracy): each case is a scroller whose switch lists the reference and every run (the model, its
    /// post-processing, a classical run, an external run); headless Chromium moves the slider (mouse and arrow
    /// keys), switches the method and the opacity, and the screenshots change as they must. A 2-D report keeps
    /// its static figures (`CompareTests`).
    @Test func compareReportScrollsThroughThreeDimensionalCasesInChromium() throws {
        let folder = try TestSupport.temporaryFolder()
        let root = try DatasetFixtures.makeNNUNet(in: folder, channels: 1)
        try DatasetFixtures.writeSplits([(["case_000", "case_001"], ["case_002", "case_003"])], in: root)
        let external = folder.appendingPathComponent("nnunet_fold0")
        try FileManager.default.createDirectory(at: external, withIntermediateDirectories: true)
        for k in 2..<4 {
            try NIfTIImage.write(
                .labels(DatasetFixtures.prediction(k)), dimensions: DatasetFixtures.dimensions,
                geometry: DatasetFixtures.geometry,
                to: external.appendingPathComponent("\(DatasetFixtures.caseName(k)).nii.gz").path)
        }
        let report = folder.appendingPathComponent("report").path
        let model = try PostProcessingTests.model(in: folder)
        let run = try TestSupport.slicelab([
            "compare", root.path, "--model", model,
            "--classical", "kmeans:space=gray,map=train-vote",
            "--post", "majority",
            "--external", "nnunet=\(external.path)",
            "--out", folder.appendingPathComponent("results.h5").path,
            "--report", report
        ])
        #expect(run.status == 0, "\(run.standardError)")
        let html = try String(contentsOfFile: report + "/index.html", encoding: .utf8)
        #expect(html.components(separatedBy: "<div class=\"scroller\"").count - 1 == 2)
        #expect(html.components(separatedBy: "class=\"sprite-image\"").count - 1 == 2)
        #expect(html.components(separatedBy: "class=\"sprite-layer\"").count - 1 == 2 * 6)
        for name in [
            "reference", "deeplabv3 (Dice", "deeplabv3.majority (Dice", "kmeans-gray-train-vote (Dice",
            "nnunet (Dice", "entropy of deeplabv3"
        ] {
            #expect(html.contains("> \(name)"), "the method switch lacks \(name)")
        }
        #expect(html.contains("Slice scrollers for 2 of 2 3-D cases"))
        #expect(html.contains("data-frames=\"8\" data-slices=\"0,1,2,3,4,5,6,7\""))
        #expect(!html.contains("<figure>"), "a case with a scroller shows no static figures")

        guard FileManager.default.isExecutableFile(atPath: Self.chromium) else {
            print(
                "ReportScrollerTests: skipped the Chromium part: \(Self.chromium) is absent "
                    + "(`make setup` installs it)")
            return
        }
        let shots = folder.appendingPathComponent("screenshots")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let driven = try TestSupport.run(
            TestSupport.python,
            [
                Self.script, Self.chromium, report + "/index.html",
                shots.path, "nnunet"
            ], timeout: 120)
        #expect(driven.status == 0, "\(driven.standardError)\n\(driven.standardOutput)")
        let summary = try JSONSerialization.jsonObject(with: Data(driven.standardOutput.utf8)) as? [String: Any]
        let checks = try #require(summary?["checks"] as? [String: [String: Any]])
        #expect(checks.count == 13, "\(checks.keys.sorted())")
        for (name, figures) in checks { #expect(figures["passed"] as? Bool == true, "\(name): \(figures)") }
    }

    /// `compare --model OUT/ --members --tta none --tta mirror --report`: the ensemble, the ensemble with mirroring
    /// and each fold alone side by side, each paired with the ensemble; every model run carries the calibration
    /// metrics, and the report draws a reliability diagram per class with a line per model run.
    @Test func compareSetsEnsembleViewsAndFoldsSideBySide() throws {
        let folder = try TestSupport.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try DatasetFixtures.makeNNUNet(in: folder, channels: 1)
        try DatasetFixtures.writeSplits([(["case_000", "case_001"], ["case_002", "case_003"])], in: root)
        let folds = folder.appendingPathComponent("cv")
        for (k, seed) in [(0, 7), (1, 8)] {
            let path = folds.appendingPathComponent("fold_\(k)/model.h5")
            try FileManager.default.createDirectory(
                at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
            let model = try DeepLabV3(
                DeepLabConfiguration(
                    architecture: .mobilenetV2, classCount: 3, inputChannels: 1, outputStride: 16,
                    atrousRates: [2, 4], asppChannels: 8, widthMultiplier: 0.35, seed: UInt64(seed)))
            try DeepLabCheckpoint.save(model, preprocessing: .minMax, to: path.path)
        }
        let (results, report) = (
            folder.appendingPathComponent("r.h5").path, folder.appendingPathComponent("report").path
        )
        let run = try TestSupport.slicelab([
            "compare", root.path, "--model", folds.path, "--members", "--tta", "none", "--tta", "mirror",
            "--classical", "otsu:space=gray,map=train-vote,classes=2", "--out", results, "--report", report
        ])
        #expect(run.status == 0, "\(run.standardError)")
        let check = """
            import h5py, sys
            f = h5py.File(sys.argv[1], 'r')
            runs = list(f['runs'])
            expected = ['deeplabv3', 'deeplabv3.fold_0', 'deeplabv3.fold_1', 'deeplabv3.tta-mirror']
            assert sorted(r for r in runs if r.startswith('deeplabv3')) == expected, runs
            for name in expected:
                assert f['runs/' + name].attrs['calibration_bins'] == 15, name
                assert 'ece' in f['runs/' + name + '/metrics'] and 'entropy_error_auroc' in f['runs/' + name + '/metrics']
                if name != 'deeplabv3':
                    assert 'deeplabv3__' + name in f['comparisons'], name
            assert f['runs/deeplabv3.fold_0'].attrs['model'].endswith('fold_0/model.h5')
            classical = [r for r in runs if not r.startswith('deeplabv3')][0]
            assert 'ece' not in f['runs/' + classical + '/metrics']
            print('ok')
            """
        #expect(try TestSupport.runPython(check, arguments: [results]).contains("ok"))
        let html = try String(contentsOfFile: report + "/index.html", encoding: .utf8)
        #expect(
            html.components(separatedBy: "<svg class=\"reliability\"").count - 1 == 2,
            "one diagram per foreground class")
        for name in ["deeplabv3", "deeplabv3.tta-mirror", "deeplabv3.fold_0", "deeplabv3.fold_1"] {
            #expect(html.contains(">\(name) (ECE "), "the diagrams lack \(name)")
        }
        #expect(html.contains("> entropy of deeplabv3"))
        let single = try TestSupport.slicelab([
            "compare", root.path, "--model", folds.path + "/fold_0/model.h5", "--members", "--out", results,
            "--overwrite"
        ])
        #expect(
            single.status == 2 && single.standardError.contains("--members runs each member"), "\(single.standardError)"
        )
    }
}
