import DeepLab
import Foundation
import ImageFiles
import TestSupport
import XCTest

/// `slicelab export --format torchvision`: a safetensors `state_dict` with torchvision's keys and a JSON
/// configuration. Without PyTorch (as in `make test`), the file is checked by SliceLab's own torchvision import
/// (`segment --weights`), which must reproduce the checkpoint's logits exactly; with PyTorch
/// (`SLICELAB_TORCH_PYTHON`, `make test-torchvision`), torchvision's constructors load it and match within 1e-4.
final class TorchvisionExportTests: ExportTestCase {
    /// torchvision against SliceLab on the same weights: the parity contract (SliceLabKit.docc, Segment).
    static let relativeTolerance = 1e-4

    private func configuration(_ architecture: Architecture, channels: Int = 3, aux: Bool = false)
        -> DeepLabConfiguration
    {
        DeepLabConfiguration(
            architecture: architecture, classCount: 3, inputChannels: channels, auxiliaryHead: aux,
            seed: 11)
    }

    typealias Architecture = DeepLabConfiguration.Architecture

    // MARK: - Without PyTorch

    func testExportedStateDictReloadsIntoSliceLabWithIdenticalLogits() throws {
        let c = configuration(.resnet18, channels: 1, aux: true)
        let checkpoint = try ExportFixtures.checkpoint(c, in: folder)
        let prefix = folder.appendingPathComponent("tv").path
        let export = try TestSupport.slicelab(["export", checkpoint, "--format", "torchvision", "--out", prefix])
        XCTAssertEqual(export.status, 0, export.standardError)
        let json =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: prefix + ".json")))
            as? [String: Any]
        XCTAssertEqual(json?["arch"] as? String, "deeplabv3_resnet18")
        XCTAssertEqual(json?["num_classes"] as? Int, 3)
        XCTAssertEqual(json?["in_channels"] as? Int, 1)
        XCTAssertEqual(json?["aux_loss"] as? Bool, true)
        let file = try SafetensorsFile.read(prefix + ".safetensors")
        XCTAssertEqual(file.storedTypes["backbone.bn1.num_batches_tracked"], "I64")
        XCTAssertEqual(file.storedTypes["backbone.bn1.running_var"], "F32")

        let input = try ExportFixtures.input(batch: 2, channels: 1, height: 37, width: 29, seed: 3, in: folder)
        let expected = try ExportFixtures.logits(checkpoint: checkpoint, input: input, in: folder)
        let reloaded = folder.appendingPathComponent("reloaded.h5").path
        let parity = try TestSupport.slicelab([
            "segment", "--weights", prefix + ".safetensors", "--arch", "deeplabv3_resnet18", "--num-classes", "3",
            "--in-channels", "1", "--aux", "--raw-input", input, "--logits", reloaded
        ])
        XCTAssertEqual(parity.status, 0, parity.standardError)
        XCTAssertEqual(
            try HDF5File.open(expected).read("/logits", as: Float.self),
            try HDF5File.open(reloaded).read("/logits", as: Float.self))
    }

    func testWhatTorchvisionCannotBuildIsRefusedWithNoFiles() throws {
        let cases: [(DeepLabConfiguration, String)] = [
            (
                DeepLabConfiguration(
                    architecture: .mobilenetV2, classCount: 2, asppChannels: 16, widthMultiplier: 0.35),
                "MobileNetV2"
            ),
            (DeepLabConfiguration(architecture: .resnet18, classCount: 2, asppChannels: 64), "ASPP width"),
            (DeepLabConfiguration(architecture: .resnet18, classCount: 2, atrousRates: [6, 12, 18]), "atrous rates"),
            (DeepLabConfiguration(architecture: .resnet18, classCount: 2, outputStride: 16), "output stride")
        ]
        for (c, reason) in cases {
            let checkpoint = try ExportFixtures.checkpoint(c, in: folder)
            let prefix = folder.appendingPathComponent("refused").path
            let result = try TestSupport.slicelab(["export", checkpoint, "--format", "torchvision", "--out", prefix])
            XCTAssertEqual(result.status, 1, result.standardError)
            XCTAssertTrue(result.standardError.contains(reason), result.standardError)
            XCTAssertEqual(result.standardError.split(separator: "\n").count, 1, result.standardError)
            for ext in [".safetensors", ".json"] {
                XCTAssertFalse(FileManager.default.fileExists(atPath: prefix + ext), ext)
            }
        }
    }

    /// The cases checked against torchvision: with PyTorch directly, without it against the committed goldens.
    private var torchvisionCases: [(DeepLabConfiguration, Int)] {
        [
            (configuration(.resnet18), 3), (configuration(.resnet34, channels: 1, aux: true), 1),
            (configuration(.resnet50, aux: true), 3), (configuration(.resnet101, channels: 1), 1)
        ]
    }

    private static let goldens = TestSupport.packageRoot.appendingPathComponent(
        "Tests/ModelExportTests/Fixtures/torchvision")

    /// Without PyTorch: the export is byte for byte the file torchvision loaded when the goldens were made
    /// (`make test-torchvision` with SLICELAB_WRITE_GOLDENS=1), and SliceLab's logits match torchvision's
    /// recorded ones within 1e-4 of the largest.
    func testExportMatchesTheCommittedTorchvisionLogits() throws {
        for (c, channels) in torchvisionCases {
            let golden = Self.goldens.appendingPathComponent("\(c.architecture.rawValue).h5").path
            let checkpoint = try ExportFixtures.checkpoint(c, in: folder)
            let prefix = folder.appendingPathComponent("tv").path
            XCTAssertEqual(
                try TestSupport.slicelab([
                    "export", checkpoint, "--format", "torchvision",
                    "--out", prefix
                ]).status, 0)
            let input = try ExportFixtures.input(
                batch: 2, channels: channels, height: 33, width: 41, seed: 5,
                in: folder)
            let logits = try ExportFixtures.logits(checkpoint: checkpoint, input: input, in: folder)
            let report = try TestSupport.runPython(
                """
                import h5py, hashlib, json, numpy as np, sys
                prefix, golden, logits = sys.argv[1:4]
                with h5py.File(golden) as g, h5py.File(logits) as l:
                    out, ours = g['out'][()], l['logits'][()]
                    digest = hashlib.sha256(open(prefix + '.safetensors', 'rb').read()).hexdigest()
                    print(json.dumps({'same_file': digest == g.attrs['safetensors_sha256'],
                                      'ratio': float(np.abs(out - ours).max() / np.abs(out).max()),
                                      'torchvision': str(g.attrs['torchvision'])}))
                """, arguments: [prefix, golden, logits])
            let values = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])
            XCTAssertEqual(
                values["same_file"] as? Bool, true,
                "\(c.architecture.rawValue): the export changed; remake the goldens (make test-torchvision "
                    + "with SLICELAB_WRITE_GOLDENS=1)")
            XCTAssertLessThanOrEqual(
                try XCTUnwrap(values["ratio"] as? Double), Self.relativeTolerance,
                c.architecture.rawValue)
        }
    }

    // MARK: - With PyTorch

    func testTorchvisionConstructorsLoadTheExportAndMatchSliceLab() throws {
        let python = ProcessInfo.processInfo.environment["SLICELAB_TORCH_PYTHON"] ?? TestSupport.python
        let probe = try TestSupport.run(python, ["-c", "import torch, safetensors"])
        guard probe.status == 0 else {
            let reason =
                "torch or safetensors is not importable by \(python) (set SLICELAB_TORCH_PYTHON, or run "
                + "make test-torchvision): torchvision parity of the export not checked"
            print("TorchvisionExportTests: skipped: \(reason)")
            throw XCTSkip(reason)
        }
        let writeGoldens = ProcessInfo.processInfo.environment["SLICELAB_WRITE_GOLDENS"] != nil
        for (c, channels) in torchvisionCases {
            let checkpoint = try ExportFixtures.checkpoint(c, in: folder)
            let prefix = folder.appendingPathComponent("tv").path
            let export = try TestSupport.slicelab(["export", checkpoint, "--format", "torchvision", "--out", prefix])
            XCTAssertEqual(export.status, 0, export.standardError)
            let input = try ExportFixtures.input(
                batch: 2, channels: channels, height: 33, width: 41, seed: 5,
                in: folder)
            let logits = try ExportFixtures.logits(checkpoint: checkpoint, input: input, in: folder)
            let golden = Self.goldens.appendingPathComponent("\(c.architecture.rawValue).h5").path
            let report = try ExportFixtures.runScript(
                "torchvision_parity.py", python: python,
                [prefix, input, logits] + (writeGoldens ? [golden] : []))
            XCTAssertEqual(report["shape"] as? [Int], [2, 3, 33, 41], c.architecture.rawValue)
            let ratio = try XCTUnwrap(report["ratio"] as? Double)
            XCTAssertLessThanOrEqual(ratio, Self.relativeTolerance, c.architecture.rawValue)
        }
    }
}
