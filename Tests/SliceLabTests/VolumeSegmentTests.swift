import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

@testable import SliceLabInference
@testable import SliceLabKit

/// `segment` on volumes (issue #18): NIfTI, 4-D NIfTI and HDF5 in; NIfTI and HDF5 label volumes out with the
/// input's geometry (read back with nibabel and h5py); `--context` from `train` to `segment`; in-plane
/// resampling; bad inputs as one line, exit 1 (a context mismatch a usage error, exit 2), nothing written.
@Suite(.serialized) struct VolumeSegmentTests {
    /// A tiny model (MobileNetV2 × 0.35, ASPP width 8), seeded, with `inputChannels` and the given sampling.
    static func model(
        in folder: URL, name: String = "model.h5", inputChannels: Int = 1,
        sampling: SliceSampling = SliceSampling(), classCount: Int = 3
    ) throws -> String {
        let path = folder.appendingPathComponent(name).path
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: classCount,
                inputChannels: inputChannels, outputStride: 16,
                atrousRates: [2, 4], asppChannels: 8, widthMultiplier: 0.35,
                seed: 11))
        try DeepLabCheckpoint.save(model, preprocessing: .minMax, to: path) { try sampling.write(into: $0) }
        return path
    }

    /// Writes an oblique NIfTI volume with nibabel: x = 20, y = 16, z = 5 (and `channels` on the 4th axis),
    /// spacing 0.8 × 0.9 × 2.5 mm, rotated about z by 20°, both sform and qform set; values a smooth pattern.
    static func writeVolume(_ path: String, channels: Int = 1) throws {
        let output = try TestSupport.runPython(
            """
            import nibabel as nib, numpy as np, sys
            path, channels = sys.argv[1], int(sys.argv[2])
            a = np.deg2rad(20.0)
            rotation = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
            affine = np.eye(4)
            affine[:3, :3] = rotation @ np.diag([0.8, 0.9, 2.5])
            affine[:3, 3] = [12.5, -40.0, 7.25]
            x, y, z = np.meshgrid(np.arange(20), np.arange(16), np.arange(5), indexing='ij')
            base = (np.sin(x / 3.0) * 100 + np.cos(y / 4.0) * 80 + z * 30).astype(np.float32)
            data = base if channels == 1 else np.stack([base * (c + 1) for c in range(channels)], axis=-1)
            image = nib.Nifti1Image(data, affine)
            image.set_qform(affine, code=1); image.set_sform(affine, code=1)
            nib.save(image, path)
            print('ok')
            """, arguments: [path, String(channels)])
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
    }

    /// The geometry check shared by the tests: the NIfTI output's affine equals the input's (1e-4), both
    /// codes 1, uint8 labels [x, y, z]; the HDF5 output's `/labels` [z, y, x] holds the same labels with the
    /// contract's spacing (z, y, x), LPS origin and direction (ITK's reading of the input's affine).
    static func checkOutputs(input: String, nifti: String?, hdf5: String?) throws {
        let output = try TestSupport.runPython(
            """
            import h5py, nibabel as nib, numpy as np, sys
            source, nifti, hdf5 = sys.argv[1], sys.argv[2], sys.argv[3]
            a = nib.load(source)
            shape = a.shape[:3]
            affine = a.affine
            zooms = np.sqrt((affine[:3, :3] ** 2).sum(axis=0))
            flip = np.diag([-1.0, -1.0, 1.0])
            direction = (flip @ affine[:3, :3] / zooms).ravel()
            origin = flip @ affine[:3, 3]
            labels = None
            if nifti != '-':
                b = nib.load(nifti)
                assert b.shape == shape, (b.shape, shape)
                assert b.get_data_dtype() == np.uint8, b.get_data_dtype()
                assert np.allclose(b.affine, affine, atol=1e-4), (b.affine, affine)
                assert np.allclose(b.get_qform(), affine, atol=1e-4) and np.allclose(b.get_sform(), affine, atol=1e-4)
                assert int(b.header['qform_code']) == 1 and int(b.header['sform_code']) == 1
                labels = np.asarray(b.dataobj).transpose(2, 1, 0)
            if hdf5 != '-':
                with h5py.File(hdf5) as f:
                    d = f['labels']
                    assert d.shape == shape[::-1], d.shape
                    assert np.allclose(d.attrs['spacing'], zooms[::-1], atol=1e-4), d.attrs['spacing']
                    assert np.allclose(d.attrs['origin'], origin, atol=1e-4), d.attrs['origin']
                    assert np.allclose(d.attrs['direction'], direction, atol=1e-4), d.attrs['direction']
                    assert int(d.attrs['geometry_version'][0]) == 2
                    if labels is not None:
                        assert np.array_equal(d[()], labels)
            print('ok')
            """, arguments: [input, nifti ?? "-", hdf5 ?? "-"])
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
    }

    // MARK: - Formats and geometry

    @Test func aNIfTIVolumeBecomesLabelVolumesWithItsGeometry() throws {
        let folder = try TestSupport.temporaryFolder("volume-segment")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("case.nii.gz").path
        try Self.writeVolume(input)
        let model = try Self.model(in: folder)
        let nifti = folder.appendingPathComponent("labels.nii.gz").path
        let hdf5 = folder.appendingPathComponent("labels.h5").path
        for out in [nifti, hdf5] {
            let result = try TestSupport.slicelab(["segment", input, "--model", model, "--out", out])
            #expect(result.status == 0, "\(result.standardError)")
        }
        try Self.checkOutputs(input: input, nifti: nifti, hdf5: hdf5)

        // The CLI's streamed labels are the library's whole-volume ones (`VolumeSegmenter.segment`).
        let image = try NIfTIImage.read(input)
        let segmenter = try VolumeSegmenter.load(checkpoint: model)
        let result = try segmenter.segment(
            image.values, shape: [5, 16, 20], geometry: image.geometry,
            probabilities: true)
        let written = try HDF5File.open(hdf5).read("/labels", as: Int32.self)
        #expect(written.values == result.labels)
        #expect(result.probabilities?.count == 3 * 5 * 16 * 20)
    }

    /// A 4-D NIfTI file's 4th axis is the channels: a 2-channel model takes them as they are; a 1-channel model
    /// takes their mean; a 3-channel model cannot take 2 (one line, exit 1, nothing written).
    @Test func fourDimensionalInputIsChannels() throws {
        let folder = try TestSupport.temporaryFolder("volume-4d")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("multi.nii").path
        try Self.writeVolume(input, channels: 2)
        for channels in [1, 2] {
            let model = try Self.model(in: folder, name: "m\(channels).h5", inputChannels: channels)
            let out = folder.appendingPathComponent("labels\(channels).nii.gz").path
            let result = try TestSupport.slicelab(["segment", input, "--model", model, "--out", out])
            #expect(result.status == 0, "\(result.standardError)")
            try Self.checkOutputs(input: input, nifti: out, hdf5: nil)
        }
        let model = try Self.model(in: folder, name: "m3.h5", inputChannels: 3)
        let out = folder.appendingPathComponent("labels3.nii.gz").path
        let result = try TestSupport.slicelab(["segment", input, "--model", model, "--out", out])
        #expect(result.status == 1)
        let lines = result.standardError.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].contains(input) && lines[0].contains("2 channels"),
            "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// An HDF5 `/image` with the geometry contract (as `convert` writes a NIfTI file) in, HDF5 and NIfTI out:
    /// the geometry is the original NIfTI file's.
    @Test func hdf5VolumesKeepTheirGeometry() throws {
        let folder = try TestSupport.temporaryFolder("volume-hdf5")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("case.nii.gz").path
        try Self.writeVolume(input)
        let image = folder.appendingPathComponent("image.h5").path
        #expect(try TestSupport.slicelab(["convert", input, image]).status == 0)
        let model = try Self.model(in: folder)
        let nifti = folder.appendingPathComponent("labels.nii").path
        let hdf5 = folder.appendingPathComponent("labels.hdf5").path
        for out in [nifti, hdf5] {
            let result = try TestSupport.slicelab(
                [
                    "segment", image, "--model", model, "--out", out,
                    "--probabilities"
                ].filter { $0 != "--probabilities" || out == hdf5 })
            #expect(result.status == 0, "\(result.standardError)")
        }
        try Self.checkOutputs(input: input, nifti: nifti, hdf5: hdf5)
        #expect(try HDF5File.open(hdf5).shape(of: "/probabilities") == [5, 3, 16, 20])
    }

    /// A DICOM series (two slices, files in reverse order) to NIfTI and HDF5: the geometry is ITK's reading of
    /// the series, computed here with pydicom from the slices' Image Position and Orientation (Patient).
    @Test func aDICOMSeriesBecomesALabelVolumeWithItsGeometry() throws {
        let folder = try TestSupport.temporaryFolder("volume-dicom")
        defer { try? FileManager.default.removeItem(at: folder) }
        let series = try SegmentationExportTests.makeSeries(in: folder)
        let model = try Self.model(in: folder)
        let nifti = folder.appendingPathComponent("labels.nii.gz").path
        let hdf5 = folder.appendingPathComponent("labels.h5").path
        for out in [nifti, hdf5] {
            let result = try TestSupport.slicelab(["segment", series.path, "--model", model, "--out", out])
            #expect(result.status == 0, "\(result.standardError)")
        }
        let check = try TestSupport.runPython(
            """
            import glob, h5py, nibabel as nib, numpy as np, pydicom, sys
            folder, nifti, hdf5 = sys.argv[1:4]
            slices = [pydicom.dcmread(p) for p in glob.glob(folder + '/*.dcm')]
            u, v = np.array(slices[0].ImageOrientationPatient[:3], float), np.array(slices[0].ImageOrientationPatient[3:], float)
            n = np.cross(u, v)
            slices.sort(key=lambda d: float(np.dot(n, np.array(d.ImagePositionPatient, float))))
            positions = [np.array(d.ImagePositionPatient, float) for d in slices]
            spacing = [float(np.dot(n, positions[1] - positions[0])), float(slices[0].PixelSpacing[0]),
                       float(slices[0].PixelSpacing[1])]
            direction = np.stack([u, v, n], axis=1)
            with h5py.File(hdf5) as f:
                d = f['labels']
                assert d.shape == (2, slices[0].Rows, slices[0].Columns), d.shape
                assert np.allclose(d.attrs['spacing'], spacing, atol=1e-4), (d.attrs['spacing'], spacing)
                assert np.allclose(d.attrs['origin'], positions[0], atol=1e-4)
                assert np.allclose(d.attrs['direction'], direction.ravel(), atol=1e-4)
                labels = d[()]
            b = nib.load(nifti)
            flip = np.diag([-1.0, -1.0, 1.0])
            affine = np.eye(4)
            affine[:3, :3] = flip @ direction @ np.diag(spacing[::-1])
            affine[:3, 3] = flip @ positions[0]
            assert np.allclose(b.affine, affine, atol=1e-4), (b.affine, affine)
            assert np.array_equal(np.asarray(b.dataobj).transpose(2, 1, 0), labels)
            print('ok')
            """, arguments: [series.path, nifti, hdf5])
        #expect(check.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
    }

    // MARK: - Context

    /// The network input of a slice with context is built as `train` builds it: neighbours clamped at the
    /// volume's edges (slice 0 with N = 1 is slices 0, 0, 1), stacked slice-major, normalised together.
    @Test func contextInputMatchesTrainingAndReplicatesEdges() throws {
        let (rows, columns) = (3, 4)
        let frames: [[Float]] = (0..<3).map { z in (0..<(rows * columns)).map { Float($0 + 100 * z) } }
        let sample = LabeledSample(
            name: "v",
            image: FloatTensor(
                shape: [3, 1, rows, columns],
                values: Array(frames.joined())),
            labels: LabelTensor(
                shape: [3, rows, columns],
                values: [Int32](repeating: 0, count: 3 * rows * columns)))
        for (frame, neighbours) in [(0, [0, 0, 1]), (1, [0, 1, 2]), (2, [1, 2, 2])] {
            let training = TrainWorkflow.contextInput(
                sample, frame: frame, context: 1, inputChannels: 1,
                preprocessing: .minMax)
            let inference = VolumeSegmenter.stackedInput(
                neighbours.map { frames[$0] }, pixels: rows * columns,
                channels: 1, perSlice: 1, preprocessing: .minMax)
            #expect(training.shape == [3, rows, columns] && training.values == inference)
        }
        // Slice 0's first two planes are the same slice (replicated), its third is slice 1.
        let edge = VolumeSegmenter.stackedInput(
            [frames[0], frames[0], frames[1]], pixels: 12, channels: 1,
            perSlice: 1, preprocessing: .none)
        #expect(
            Array(edge[0..<12]) == frames[0] && Array(edge[12..<24]) == frames[0] && Array(edge[24...]) == frames[1])
    }

    /// Z-score normalises a volume with the whole case's statistics, as nnU-Net's `ZScoreNormalization`, in
    /// training and at inference alike: slices of different brightness keep their difference (a per-slice
    /// z-score would erase it), the case's inputs together have mean 0 and deviation 1, and `VolumeSegmenter`
    /// gives each slice the logits of the model on `train`'s input for it.
    @Test func zScoreIsPerCaseOnVolumes() throws {
        let (rows, columns) = (12, 10)
        let frames: [[Float]] = (0..<4).map { z in (0..<(rows * columns)).map { Float(($0 * 7) % 13 + 40 * z) } }
        let sample = LabeledSample(
            name: "v",
            image: FloatTensor(
                shape: [4, 1, rows, columns],
                values: Array(frames.joined())),
            labels: LabelTensor(
                shape: [4, rows, columns],
                values: [Int32](repeating: 0, count: 4 * rows * columns)))
        let options = TrainOptions(
            datasetPath: "unused", architecture: "deeplabv3_mobilenet_v2", classCount: 3,
            outputPath: "unused.h5")
        var spacings: [[Double]] = []
        let inputs = TrainWorkflow.frames(of: [sample], options: options, preprocessing: .zScore, spacings: &spacings)
            .map(\.image.values)
        let all = inputs.flatMap { $0 }.map(Double.init)
        let mean = all.reduce(0, +) / Double(all.count)
        let deviation = (all.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(all.count)).squareRoot()
        #expect(abs(mean) < 1e-6 && abs(deviation - 1) < 1e-6)
        let firstMean = inputs[0].reduce(0) { $0 + Double($1) } / Double(rows * columns)
        #expect(firstMean < -1, "slice 0 is the darkest: \(firstMean)")

        let folder = try TestSupport.temporaryFolder("volume-zscore")
        defer { try? FileManager.default.removeItem(at: folder) }
        let loaded = try VolumeSegmenter.load(checkpoint: try Self.model(in: folder))
        let segmenter = VolumeSegmenter(model: loaded.model, preprocessing: .zScore, sampling: loaded.sampling)
        var reads = 0
        try segmenter.run(
            slices: 4, rows: rows, columns: columns, channels: 1, spacing: nil, source: "v",
            slice: {
                reads += 1
                return frames[$0]
            }
        ) { z, logits in
            let expected = try segmenter.logits(inputs[z], channels: 1, rows: rows, columns: columns, spacing: nil)
            #expect(logits.values == expected.values, "slice \(z)")
        }
        #expect(reads == 8, "one pass for the statistics, one to segment")
    }

    /// `train --context 1` on a set of NIfTI volumes stores the context (and the set's median in-plane spacing)
    /// with a model of 3 input channels; `segment` takes it without `--context` or with the same one, and
    /// refuses another as a usage error (exit 2), writing nothing.
    @Test func contextRoundTripsFromTrainToSegment() throws {
        let folder = try TestSupport.temporaryFolder("volume-context")
        defer { try? FileManager.default.removeItem(at: folder) }
        let set = folder.appendingPathComponent("set")
        let written = try TestSupport.runPython(
            """
            import json, os, nibabel as nib, numpy as np, sys
            root = sys.argv[1]
            for sub in ('images', 'labels'):
                os.makedirs(os.path.join(root, sub), exist_ok=True)
            rng = np.random.default_rng(3)
            names = []
            for index in range(3):
                labels = np.zeros((32, 32, 4), np.uint8)
                labels[8:20, 10:24, :] = 1
                labels[22:30, 4:12, 1:3] = 2
                image = (labels * 80 + 40 + rng.normal(0, 5, labels.shape)).astype(np.float32)
                affine = np.diag([0.7, 0.7, 3.0, 1.0])
                name = f'vol{index}'
                names.append(name)
                nib.save(nib.Nifti1Image(image, affine), os.path.join(root, 'images', name + '.nii.gz'))
                nib.save(nib.Nifti1Image(labels, affine), os.path.join(root, 'labels', name + '.nii.gz'))
            json.dump({'name': 'volumes', 'classes': ['background', 'a', 'b'], 'modality': 'MR',
                       'splits': {'train': names[:2], 'val': names[2:]},
                       'preprocessing': {'normalize': 'zscore'}}, open(os.path.join(root, 'dataset.json'), 'w'))
            print('ok')
            """, arguments: [set.path])
        #expect(written.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
        let model = folder.appendingPathComponent("m.h5").path
        let trained = try TestSupport.slicelab([
            "train", set.path, "--arch", "deeplabv3_mobilenet_v2",
            "--num-classes", "3", "--context", "1", "--steps", "1",
            "--batch", "2", "--crop", "32", "--out", model
        ])
        #expect(trained.status == 0, "\(trained.standardError)")
        let sampling = try SliceSampling.read(model)
        #expect(sampling.context == 1)
        #expect(
            zip(sampling.spacing ?? [], [0.7, 0.7]).allSatisfy { abs($0 - $1) < 1e-6 } && sampling.spacing?.count == 2)
        #expect(try DeepLabCheckpoint.load(model).model.configuration.inputChannels == 3)

        let input = set.appendingPathComponent("images/vol2.nii.gz").path
        for (index, context) in [[], ["--context", "1"]].enumerated() {
            let out = folder.appendingPathComponent("out\(index).nii.gz").path
            let result = try TestSupport.slicelab(["segment", input, "--model", model, "--out", out] + context)
            #expect(result.status == 0, "\(result.standardError)")
            try Self.checkOutputs(input: input, nifti: out, hdf5: nil)
        }
        let refused = folder.appendingPathComponent("refused.nii.gz").path
        let result = try TestSupport.slicelab([
            "segment", input, "--model", model, "--out", refused,
            "--context", "0"
        ])
        #expect(result.status == 2)
        let lines = result.standardError.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].contains("--context 0") && lines[0].contains("context 1"),
            "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: refused))
    }

    // MARK: - Resampling

    /// Bilinear resampling with pixel centres aligned and edges clamped, by hand: 2 × 2 up to 4 × 4 samples at
    /// source coordinates 0, 0.25, 0.75, 1 on each axis; 4 × 4 down to 2 × 2 averages each 2 × 2 block. These,
    /// and the 3 × 5 → 2 × 7 case below, are also what `scipy.ndimage.zoom(a, …, order=1, grid_mode=True,
    /// mode='nearest')` gives (SciPy 1.17.1, run once outside the test .venv, which has no SciPy; values to 1e-6).
    @Test func bilinearResamplingMatchesHandComputedValues() {
        let odd: [Float] = [
            0.0, 1.0, 2.828427, 5.196152, 8.0, 11.18034, 14.696938, 18.520259, 22.627417, 27.0,
            31.622777, 36.482873, 41.569219, 46.872167, 52.383203
        ]  // (0..<15)^1.5
        let scipy: [Float] = [
            2.795085, 3.726028, 5.089135, 6.751385, 8.75323, 10.923696, 12.75, 26.512167,
            29.097437, 32.399415, 35.806979, 39.381265, 43.050875, 46.037403
        ]
        let resampled = BilinearResampling.resample(odd, planes: 1, rows: 3, columns: 5, toRows: 2, toColumns: 7)
        #expect(resampled.count == 14 && zip(resampled, scipy).allSatisfy { abs($0 - $1) < 1e-4 }, "\(resampled)")
        let up = BilinearResampling.resample(
            [0, 1, 2, 3], planes: 1, rows: 2, columns: 2, toRows: 4,
            toColumns: 4)
        let expected: [Float] = [0, 0.25, 0.75, 1, 0.5, 0.75, 1.25, 1.5, 1.5, 1.75, 2.25, 2.5, 2, 2.25, 2.75, 3]
        #expect(zip(up, expected).allSatisfy { abs($0 - $1) < 1e-6 } && up.count == 16)
        let source = (0..<16).map(Float.init)
        let down = BilinearResampling.resample(
            source + source.map { $0 * 2 }, planes: 2, rows: 4, columns: 4,
            toRows: 2, toColumns: 2)
        let blocks: [Float] = [2.5, 4.5, 10.5, 12.5]
        #expect(zip(down, blocks + blocks.map { $0 * 2 }).allSatisfy { abs($0 - $1) < 1e-5 } && down.count == 8)
    }

    /// A model trained at 2 mm sees a 0.8 × 0.9 mm slice of 16 × 20 as 7 × 8 (rounded), and its labels come
    /// back on the input's grid; a checkpoint without a training spacing never resamples.
    @Test func slicesAreResampledToTheTrainingSpacingAndBack() throws {
        let folder = try TestSupport.temporaryFolder("volume-resample")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("case.nii.gz").path
        try Self.writeVolume(input)
        let model = try Self.model(in: folder, sampling: SliceSampling(spacing: [2, 2]))
        let segmenter = try VolumeSegmenter.load(checkpoint: model)
        let size = segmenter.resampledSize(rows: 16, columns: 20, spacing: [2.5, 0.9, 0.8])
        #expect(size?.rows == 7 && size?.columns == 8)
        #expect(
            try VolumeSegmenter.load(checkpoint: Self.model(in: folder, name: "plain.h5"))
                .resampledSize(rows: 16, columns: 20, spacing: [2.5, 0.9, 0.8]) == nil)
        let out = folder.appendingPathComponent("labels.nii.gz").path
        let result = try TestSupport.slicelab(["segment", input, "--model", model, "--out", out])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.contains("resampled from 16×20 to 7×8"), "\(result.standardError)")
        try Self.checkOutputs(input: input, nifti: out, hdf5: nil)
    }

    // MARK: - Bad input

    /// A truncated NIfTI file, an output format `segment` does not write, and `--probabilities` into NIfTI are
    /// each one line naming the file, exit 1, and nothing written.
    @Test func badInputsAreOneLineAndWriteNothing() throws {
        let folder = try TestSupport.temporaryFolder("volume-bad")
        defer { try? FileManager.default.removeItem(at: folder) }
        let good = folder.appendingPathComponent("case.nii").path
        try Self.writeVolume(good)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: good)))
        bytes.removeLast(100)
        let cut = folder.appendingPathComponent("cut.nii").path
        try Data(bytes).write(to: URL(fileURLWithPath: cut))
        let model = try Self.model(in: folder)
        let cases: [(input: String, out: String, extra: [String], names: String)] = [
            (cut, "a.nii.gz", [], cut),
            (good, "b.mha", [], "b.mha"),
            (good, "c.nii.gz", ["--probabilities"], "c.nii.gz")
        ]
        for item in cases {
            let out = folder.appendingPathComponent(item.out).path
            let result = try TestSupport.slicelab(["segment", item.input, "--model", model, "--out", out] + item.extra)
            #expect(result.status == 1)
            let lines = result.standardError.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains(item.names), "\(result.standardError)")
            #expect(!FileManager.default.fileExists(atPath: out))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["case.nii", "cut.nii", "model.h5"], "\(names)")
    }
}
