import Foundation
import ImageFiles
import SliceLabSupport

/// Small synthetic sets in nnU-Net v2 and Decathlon layouts: 8 × 16 × 16 (z, y, x) volumes with spacing
/// (3, 0.75, 1.25) mm, a sphere (class 1) and a box (class 2). The label formulas are those of
/// `Datasets/goldens/dataset_metrics_goldens.py`, whose medpy values the tests compare with.
enum DatasetFixtures {
    static let shape = (slices: 8, rows: 16, columns: 16)
    static let geometry = VolumeGeometry(
        spacing: [3.0, 0.75, 1.25], origin: [-10, 20, 30],
        direction: [-1, 0, 0, 0, -1, 0, 0, 0, 1])
    static var dimensions: [Int] { [shape.columns, shape.rows, shape.slices] }

    /// The labels of case `k` ([z][y][x]): `reference(k)` in the goldens script.
    static func reference(_ k: Int) -> [Int32] {
        volume { z, y, x in
            var label: Int32 = 0
            let (cz, cy, cx) = (3 + k % 2, 6, 5 + k)
            if 4 * (z - cz) * (z - cz) + (y - cy) * (y - cy) + (x - cx) * (x - cx) <= 16 { label = 1 }
            if (1...5).contains(z), (11...14).contains(y), ((8 + k % 3)...14).contains(x) { label = 2 }
            return label
        }
    }

    /// Another tool's labels for case `k`: `prediction(k)` in the goldens script.
    static func prediction(_ k: Int) -> [Int32] {
        volume { z, y, x in
            var label: Int32 = 0
            let (cz, cy, cx) = (3 + k % 2, 7, 5 + k)
            if 4 * (z - cz) * (z - cz) + (y - cy) * (y - cy) + (x - cx) * (x - cx) <= 16 + 3 * k { label = 1 }
            if (2...6).contains(z), (11...13).contains(y), (9...14).contains(x) { label = 2 }
            return label
        }
    }

    /// Channel `c` of case `k`: the labels as intensities plus a fixed texture.
    static func image(_ k: Int, channel c: Int) -> [Float] {
        let labels = reference(k)
        var index = 0
        return volume { z, y, x in
            defer { index += 1 }
            let texture = Float((x * 7 + y * 3 + z * 5 + k) % 11)
            return c == 0 ? Float(labels[index]) * 100 + texture : 50 - Float(labels[index]) * 20 + texture
        }
    }

    static func volume<T>(_ value: (Int, Int, Int) -> T) -> [T] {
        var values: [T] = []
        for z in 0..<shape.slices {
            for y in 0..<shape.rows {
                for x in 0..<shape.columns { values.append(value(z, y, x)) }
            }
        }
        return values
    }

    static func caseName(_ k: Int) -> String { String(format: "case_%03d", k) }

    /// Writes an nnU-Net v2 raw set `Dataset501_Synth` of `count` cases with `channels` channels into `folder`.
    @discardableResult
    static func makeNNUNet(in folder: URL, count: Int = 4, channels: Int = 2) throws -> URL {
        let root = folder.appendingPathComponent("Dataset501_Synth")
        for sub in ["imagesTr", "labelsTr", "imagesTs"] {
            try FileManager.default.createDirectory(
                at: root.appendingPathComponent(sub),
                withIntermediateDirectories: true)
        }
        for k in 0..<count {
            for c in 0..<channels {
                let file = "imagesTr/\(caseName(k))_" + String(format: "%04d", c) + ".nii.gz"
                try NIfTIImage.write(
                    .float32(image(k, channel: c)), dimensions: dimensions, geometry: geometry,
                    to: root.appendingPathComponent(file).path)
            }
            try NIfTIImage.write(
                .labels(reference(k)), dimensions: dimensions, geometry: geometry,
                to: root.appendingPathComponent("labelsTr/\(caseName(k)).nii.gz").path)
        }
        try NIfTIImage.write(
            .float32(image(9, channel: 0)), dimensions: dimensions, geometry: geometry,
            to: root.appendingPathComponent("imagesTs/test_009_0000.nii.gz").path)
        let json: [String: Any] = [
            "name": "Synth",
            "channel_names": Dictionary(
                uniqueKeysWithValues: (0..<channels).map {
                    ("\($0)", $0 == 0 ? "CT" : "noise")
                }),
            "labels": ["background": 0, "sphere": 1, "box": 2], "numTraining": count, "file_ending": ".nii.gz"
        ]
        try JSONSerialization.data(withJSONObject: json).write(to: root.appendingPathComponent("dataset.json"))
        return root
    }

    /// Writes a Decathlon set `Task09_Synth` of `count` cases whose images are 4-D, two channels on the 4th axis.
    @discardableResult
    static func makeMSD(in folder: URL, count: Int = 5) throws -> URL {
        let root = folder.appendingPathComponent("Task09_Synth")
        for sub in ["imagesTr", "labelsTr"] {
            try FileManager.default.createDirectory(
                at: root.appendingPathComponent(sub),
                withIntermediateDirectories: true)
        }
        var training: [[String: String]] = []
        for k in 0..<count {
            let name = String(format: "synth_%03d", k)
            try NIfTIImage.write(
                .float32(image(k, channel: 0) + image(k, channel: 1)), dimensions: dimensions + [2],
                geometry: geometry, to: root.appendingPathComponent("imagesTr/\(name).nii.gz").path)
            try NIfTIImage.write(
                .labels(reference(k)), dimensions: dimensions, geometry: geometry,
                to: root.appendingPathComponent("labelsTr/\(name).nii.gz").path)
            training.append(["image": "./imagesTr/\(name).nii.gz", "label": "./labelsTr/\(name).nii.gz"])
        }
        let json: [String: Any] = [
            "name": "Synth MSD", "modality": ["0": "T1", "1": "T2"],
            "labels": ["0": "background", "1": "sphere", "2": "box"],
            "numTraining": count, "numTest": 0, "training": training, "test": [String]()
        ]
        try JSONSerialization.data(withJSONObject: json).write(to: root.appendingPathComponent("dataset.json"))
        return root
    }

    /// Writes `splits_final.json` beside `dataset.json`.
    static func writeSplits(_ folds: [(train: [String], val: [String])], in root: URL) throws {
        let list = folds.map { ["train": $0.train, "val": $0.val] }
        try JSONSerialization.data(withJSONObject: list).write(to: root.appendingPathComponent("splits_final.json"))
    }
}
