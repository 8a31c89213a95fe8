import DeepLab
import Foundation
import ImageFiles
import SliceLabKit
import TestSupport
import Testing

/// `slicelab compare` end to end on a generated set: bright discs and squares on a noisy background.
@Suite struct CompareTests {
    /// Writes a labeled set of `count` 48×48 cases (classes: background, disc, square) and returns its folder.
    static func makeSet(in folder: URL, count: Int = 6) throws -> URL {
        let root = folder.appendingPathComponent("shapes")
        for sub in ["images", "labels"] {
            try FileManager.default.createDirectory(
                at: root.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        var generator = SystemRandomNumberGenerator()
        var names: [String] = []
        for index in 0..<count {
            let name = String(format: "case%02d", index)
            names.append(name)
            var pixels = [UInt16](repeating: 0, count: 48 * 48)
            var labels = [UInt8](repeating: 0, count: 48 * 48)
            let (cy, cx) = (14 + index % 3 * 4, 14 + index % 2 * 5)
            for y in 0..<48 {
                for x in 0..<48 {
                    var (value, label): (Double, UInt8) = (100, 0)
                    if (y - cy) * (y - cy) + (x - cx) * (x - cx) < 64 { (value, label) = (600, 1) }
                    if (30...40).contains(y), (26...40).contains(x) { (value, label) = (1100, 2) }
                    pixels[y * 48 + x] = UInt16(value + Double.random(in: -40...40, using: &generator))
                    labels[y * 48 + x] = label
                }
            }
            try PNGImage(rows: 48, columns: 48, channels: 1, samples: pixels)
                .write(to: root.appendingPathComponent("images/\(name).png").path)
            try PNGImage(rows: 48, columns: 48, channels: 1, samples: labels)
                .write(to: root.appendingPathComponent("labels/\(name).png").path)
        }
        let json: [String: Any] = [
            "name": "shapes", "classes": ["background", "disc", "square"], "modality": "OT",
            "splits": ["train": Array(names.prefix(3)), "test": Array(names.suffix(from: 3))],
            "spacing": [0.5, 0.5]
        ]
        try JSONSerialization.data(withJSONObject: json).write(to: root.appendingPathComponent("dataset.json"))
        return root
    }

    /// An untrained (seeded) model: the pipeline is under test here, not accuracy.
    static func makeModel(in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("model.h5").path
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .resnet18, classCount: 3, inputChannels: 1,
                outputStride: 16, atrousRates: [6, 12, 18], asppChannels: 32))
        try DeepLabCheckpoint.save(model, preprocessing: .percentile(low: 0.5, high: 99.5), to: path)
        return path
    }

    @Test func compareWritesOneRunPerMethodComparisonsAndAReport() throws {
        let folder = try TestSupport.temporaryFolder()
        let set = try Self.makeSet(in: folder)
        let model = try Self.makeModel(in: folder)
        let results = folder.appendingPathComponent("results.h5").path
        let report = folder.appendingPathComponent("report").path
        let run = try TestSupport.slicelab([
            "compare", set.path, "--model", model, "--classical",
            "kmeans:space=gray,map=train-vote", "--classical", "multiotsu:map=oracle",
            "--out", results, "--report", report, "--timings"
        ])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardOutput.contains("kmeans-gray-train-vote"))
        #expect(run.standardOutput.contains("multiotsu-gray-hungarian-oracle"))
        #expect(run.standardOutput.contains("segment deeplabv3"))
        let check = """
            import h5py, sys, math
            f = h5py.File(sys.argv[1], 'r')
            runs = sorted(f['runs'])
            assert runs == ['deeplabv3', 'kmeans-gray-train-vote', 'multiotsu-gray-hungarian-oracle'], runs
            for r in runs:
                g = f['runs'][r]
                assert [s.decode() for s in g['case_ids'][:]] == ['case03', 'case04', 'case05']
                assert g['metrics/dice'].shape == (3, 3) and g['confusion'].shape == (3, 3, 3)
                assert g['spacing'][0].tolist() == [1.0, 0.5, 0.5], g['spacing'][0]
                assert g['labels/case03'].shape[-2:] == (48, 48)
            kd = f['runs/kmeans-gray-train-vote/metrics/dice'][:, 1:]
            assert kd.min() > 0.9, kd   # well-separated intensities: the classical baseline must be near perfect
            assert 'oracle' in f['runs/multiotsu-gray-hungarian-oracle'].attrs['config']
            assert sorted(f['comparisons']) == ['deeplabv3__kmeans-gray-train-vote', 'deeplabv3__multiotsu-gray-hungarian-oracle']
            assert f['comparisons/deeplabv3__kmeans-gray-train-vote/dice'].shape == (3, 4)
            print('ok')
            """
        #expect(try TestSupport.runPython(check, arguments: [results]).contains("ok"))
        let html = try String(contentsOfFile: report + "/index.html", encoding: .utf8)
        #expect(html.contains("<table id=\"summary\">"))
        #expect(html.components(separatedBy: "data:image/png;base64,").count - 1 == 3 * 5)
        #expect(html.components(separatedBy: "<svg class=\"boxplot\"").count - 1 == 2)
        try Self.checkRenderedInChromium(report + "/index.html", images: 15, folder: folder)
    }

    /// Opens the report in headless Chromium (installed by `make setup`): the DOM it builds has the table, the
    /// box plots and every image, and its screenshot shows the tinted overlays.
    static func checkRenderedInChromium(_ page: String, images: Int, folder: URL) throws {
        let chromium = "/usr/bin/chromium"
        let flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        let dom = try TestSupport.run(chromium, flags + ["--dump-dom", "file://" + page])
        #expect(dom.status == 0, "\(dom.standardError)")
        #expect(dom.standardOutput.contains("<table id=\"summary\">"))
        #expect(dom.standardOutput.components(separatedBy: "<img ").count - 1 == images)
        #expect(dom.standardOutput.contains("<svg class=\"boxplot\""))
        let screenshot = folder.appendingPathComponent("report.png").path
        let shot = try TestSupport.run(
            chromium,
            flags + [
                "--window-size=1400,2400", "--screenshot=" + screenshot,
                "file://" + page
            ])
        #expect(shot.status == 0, "\(shot.standardError)")
        let picture = try PNGImage.read(screenshot)
        let samples = picture.intSamples
        var tinted = 0
        for pixel in 0..<(picture.rows * picture.columns) {
            let rgb = (0..<3).map { samples[pixel * picture.channels + $0] }
            if rgb.max()! - rgb.min()! > 60 { tinted += 1 }
        }
        #expect(tinted > 500, "the screenshot shows \(tinted) tinted pixels: the overlays did not render")
    }

    @Test func badSpecsAndSetsAreClearErrors() throws {
        let folder = try TestSupport.temporaryFolder()
        let set = try Self.makeSet(in: folder, count: 4)
        let model = try Self.makeModel(in: folder)
        let out = folder.appendingPathComponent("r.h5").path
        let badSpec = try TestSupport.slicelab([
            "compare", set.path, "--model", model, "--classical", "kmeans:colour=lab",
            "--out", out
        ])
        #expect(badSpec.status == 2)
        #expect(badSpec.standardError.contains("unknown key 'colour'"))
        let badSplit = try TestSupport.slicelab(["compare", set.path, "--model", model, "--split", "val", "--out", out])
        #expect(badSplit.status == 1)
        #expect(badSplit.standardError.contains("split 'val' has no cases"))
        // A classical configuration that cannot make the set's classes is refused before the model is loaded (a
        // file that is no model would be the error otherwise), not after every case went through the model.
        let notAModel = folder.appendingPathComponent("not-a-model.h5")
        try Data("not HDF5".utf8).write(to: notAModel)
        for (spec, message) in [
            ("otsu", "Otsu's method makes 2 classes, not 3"),
            ("kmeans:classes=4,map=intensity", "map=intensity needs classes=3")
        ] {
            let early = try TestSupport.slicelab([
                "compare", set.path, "--model", notAModel.path, "--classical", spec,
                "--out", out
            ])
            #expect(early.status != 0 && early.standardError.contains(message), "\(spec): \(early.standardError)")
        }
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
