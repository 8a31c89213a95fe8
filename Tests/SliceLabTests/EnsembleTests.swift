import DeepLab
import Foundation
import ImageFiles
import TestSupport
import Testing

/// `segment --model A --model B --tta mirror --uncertainty` end to end against ONNX Runtime: each member exported to
/// ONNX, every mirrored view run in ONNX Runtime, flipped back, softmaxed and averaged in numpy, which also gives the
/// entropy of the mean and the mutual information.
@Suite(.serialized) struct EnsembleTests {
    /// A small model with its own random initialisation (seeded), saved without preprocessing so the input reaches
    /// the network as it is in the file; and the same exported to ONNX.
    static func member(seed: UInt64, classes: Int = 3, in folder: URL) throws -> String {
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: classes, inputChannels: 1, outputStride: 16,
                atrousRates: [2, 4], asppChannels: 8, widthMultiplier: 0.35, seed: seed))
        let path = folder.appendingPathComponent("fold_\(seed)/model.h5")
        try FileManager.default.createDirectory(
            at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
        try DeepLabCheckpoint.save(model, preprocessing: .none, to: path.path)
        return path.path
    }

    static func image(in folder: URL) throws -> String {
        let (frames, rows, columns) = (2, 37, 50)
        let values = (0..<(frames * rows * columns)).map { Float(sin(Double($0) * 0.37) + cos(Double($0 % 50) * 0.2)) }
        let path = folder.appendingPathComponent("in.h5").path
        try HDF5File.write(to: path) { try $0.write(values, shape: [frames, rows, columns], to: "/image") }
        return path
    }

    @Test func ensembleWithMirroringAveragesWhatONNXRuntimeComputesForEveryView() throws {
        let folder = try TestSupport.temporaryFolder("ensemble")
        defer { try? FileManager.default.removeItem(at: folder) }
        let members = try [1, 2].map { try Self.member(seed: $0, in: folder) }
        let input = try Self.image(in: folder)
        for member in members {
            let export = try TestSupport.slicelab([
                "export", member, "--format", "onnx", "--out", member.replacingOccurrences(of: ".h5", with: ".onnx")
            ])
            #expect(export.status == 0, "\(export.standardError)")
        }
        let out = folder.appendingPathComponent("out.h5").path
        let uncertainty = folder.appendingPathComponent("uncertainty.h5").path
        let result = try TestSupport.slicelab([
            "segment", input, "--model", folder.path, "--tta", "mirror", "--probabilities", "--out", out, "--timings",
            "--uncertainty", uncertainty
        ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.contains("2 model(s) × 4 view(s) = 8 forward passes a slice"))
        let report = try TestSupport.runPython(
            """
            import sys, json, h5py, numpy as np, onnxruntime
            image = h5py.File(sys.argv[1], "r")["image"][()].astype(np.float32)[:, None]  # [frames, 1, H, W]
            out = h5py.File(sys.argv[2], "r")
            ours, labels = out["probabilities"][()], out["labels"][()]
            unc = h5py.File(sys.argv[3], "r")
            total, entropies = 0, 0
            entropy = lambda q: -(q * np.log(np.maximum(q, 1e-30))).sum(axis=1)
            for member in sys.argv[4:]:
                session = onnxruntime.InferenceSession(member, providers=["CPUExecutionProvider"])
                for axes in [(), (2,), (3,), (2, 3)]:
                    view = np.flip(image, axes).copy() if axes else image
                    logits = session.run(["logits"], {"image": view})[0]
                    p = np.exp(logits - logits.max(axis=1, keepdims=True))
                    p /= p.sum(axis=1, keepdims=True)
                    back = np.flip(p, axes) if axes else p  # in the slice's frame
                    total, entropies = total + back, entropies + entropy(back)
            passes = 4 * len(sys.argv[4:])
            theirs = total / passes
            information = np.maximum(entropy(theirs) - entropies / passes, 0)
            print(json.dumps({"difference": float(np.abs(ours - theirs).max()),
                              "labels_agree": float(np.mean(labels == theirs.argmax(axis=1))),
                              "views_differ": float(np.abs(theirs - p).max()),
                              "entropy": float(np.abs(unc["entropy"][()] - entropy(theirs)).max()),
                              "information": float(np.abs(unc["mutual_information"][()] - information).max()),
                              "information_max": float(information.max())}))
            """,
            arguments: [input, out, uncertainty] + members.map { $0.replacingOccurrences(of: ".h5", with: ".onnx") })
        let values = try JSONDecoder().decode([String: Double].self, from: Data(report.utf8))
        #expect(values["difference"]! < 2e-5, "\(report)")
        #expect(values["labels_agree"]! > 0.999, "\(report)")
        #expect(values["views_differ"]! > 1e-3, "the views must matter for the test to mean anything: \(report)")
        #expect(values["entropy"]! < 1e-4 && values["information"]! < 1e-4, "\(report)")
        #expect(values["information_max"]! > 1e-4, "\(report)")
    }

    /// One model on one slice takes no views by default; members that differ in classes are refused in one line
    /// naming both files; a folder without fold models is named.
    @Test func defaultsAndRefusals() throws {
        let folder = try TestSupport.temporaryFolder("ensemble")
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try Self.member(seed: 1, in: folder)
        let other = try Self.member(seed: 2, classes: 4, in: folder)
        let image = folder.appendingPathComponent("slice.h5").path
        try HDF5File.write(to: image) {
            try $0.write([Float](repeating: 0.5, count: 30 * 30), shape: [30, 30], to: "/image")
        }
        let uncertainty = folder.appendingPathComponent("u.nii.gz").path
        let single = try TestSupport.slicelab([
            "segment", image, "--model", first, "--out", folder.appendingPathComponent("a.h5").path, "--timings",
            "--uncertainty", uncertainty
        ])
        let shape = try TestSupport.runPython(
            """
            import sys, nibabel as nib, numpy as np
            data = np.asarray(nib.load(sys.argv[1]).dataobj)
            assert data.dtype == np.float32 and 0 <= data.min() and data.max() <= np.log(3) + 1e-6, (data.min(), data.max())
            print(list(data.shape))
            """, arguments: [uncertainty])
        #expect(shape.trimmingCharacters(in: .whitespacesAndNewlines) == "[30, 30, 1]", "one model: entropy only")
        #expect(
            single.status == 0 && !single.standardError.contains("forward passes a slice"), "\(single.standardError)")
        // Fold models of one set differ a little in training spacing: each resamples to its own, and they average.
        let third = try Self.member(seed: 3, in: folder)
        try HDF5File.write(to: third) { try $0.setAttribute("training_spacing", .doubles([0.9, 0.9])) }
        let spaced = try TestSupport.slicelab([
            "segment", image, "--model", first, "--model", third, "--out", folder.appendingPathComponent("s.h5").path,
            "--timings"
        ])
        #expect(spaced.status == 0 && spaced.standardError.contains("2 model(s)"), "\(spaced.standardError)")
        let mismatch = try TestSupport.slicelab([
            "segment", image, "--model", first, "--model", other, "--out", folder.appendingPathComponent("b.h5").path
        ])
        #expect(mismatch.status != 0 && mismatch.standardError.contains("cannot be averaged"))
        #expect(mismatch.standardError.contains(other) && mismatch.standardError.contains("3 classes against 4"))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("b.h5").path))
        let empty = folder.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let none = try TestSupport.slicelab([
            "segment", image, "--model", empty.path, "--out", folder.appendingPathComponent("c.h5").path
        ])
        #expect(none.status != 0 && none.standardError.contains("fold_K/model.h5"), "\(none.standardError)")
    }

    /// The bundled model was trained with left–right flips only: mirroring leaves up–down out and says so;
    /// `mirror+scale` adds the scales 0.9 and 1.1; probabilities stay a distribution.
    @Test func mirroringFollowsTheTrainingsFlipsAndScalesAdd() throws {
        let folder = try TestSupport.temporaryFolder("ensemble")
        defer { try? FileManager.default.removeItem(at: folder) }
        let demo = TestSupport.packageRoot.appendingPathComponent("Sources/SliceLabKit/Resources/Demo")
        let model = demo.appendingPathComponent("models/mni-brain.h5").path
        let image = demo.appendingPathComponent("mni-brain/images/axial035.dcm").path
        let out = folder.appendingPathComponent("out.h5").path
        let result = try TestSupport.slicelab([
            "segment", image, "--model", model, "--tta", "mirror+scale", "--probabilities", "--out", out, "--timings"
        ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.contains("trained without up–down flips"), "\(result.standardError)")
        #expect(result.standardError.contains("1 model(s) × 6 view(s) = 6 forward passes a slice"))
        let probabilities = try HDF5File.open(out).read("/probabilities", as: Float.self)
        let (k, plane) = (probabilities.shape[1], probabilities.shape[2] * probabilities.shape[3])
        let sums = (0..<plane).map { p in (0..<k).map { probabilities.values[$0 * plane + p] }.reduce(0, +) }
        #expect(sums.allSatisfy { abs($0 - 1) < 1e-4 })
    }
}
