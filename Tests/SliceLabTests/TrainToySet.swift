import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import SliceLabSupport

/// The toy labeled set of issue #5: bright shapes of 3 classes (discs = 1, squares = 2, on a noisy background
/// = 0) with distinct brightness, written as 8-bit PNG images and label maps with a `dataset.json`.
/// Deterministic under its seed.
enum TrainToySet {
    /// Writes `train` + `val` cases of `size`×`size` pixels into a new folder and returns it.
    static func write(
        to folder: URL, trainCases: Int, validationCases: Int, size: Int = 128, seed: UInt64 = 1,
        preprocessing: String = #"{"normalize": "window", "center": 127.5, "width": 255}"#
    ) throws {
        let fm = FileManager.default
        for sub in ["images", "labels"] {
            try fm.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        var random = SeededGenerator(seed: seed)
        var names: [String] = []
        for index in 0..<(trainCases + validationCases) {
            let name = String(format: "toy%03d", index)
            names.append(name)
            let (image, labels) = sample(size: size, random: &random)
            try PNGImage(rows: size, columns: size, channels: 1, samples: image)
                .write(to: folder.appendingPathComponent("images/\(name).png").path)
            try PNGImage(rows: size, columns: size, channels: 1, samples: labels)
                .write(to: folder.appendingPathComponent("labels/\(name).png").path)
        }
        let quoted = { (list: ArraySlice<String>) in list.map { "\"\($0)\"" }.joined(separator: ", ") }
        let json = """
            {"name": "toy-shapes", "classes": ["background", "disc", "square"], "modality": "OT",
             "splits": {"train": [\(quoted(names.prefix(trainCases)))], "val": [\(quoted(names.suffix(validationCases)))]},
             "preprocessing": \(preprocessing)}
            """
        try Data(json.utf8).write(to: folder.appendingPathComponent("dataset.json"))
    }

    /// One image: background ≈ 50, discs ≈ 130, squares ≈ 210, Gaussian noise σ = 12, two to four shapes
    /// (at least one disc and one square; later shapes may cover earlier ones).
    static func sample(size: Int, random: inout SeededGenerator) -> (image: [UInt8], labels: [UInt8]) {
        var labels = [UInt8](repeating: 0, count: size * size)
        for shape in 0..<(2 + random.index(below: 3)) {
            let isSquare = shape < 2 ? shape == 1 : random.bernoulli(0.5)  // every image has both classes
            let radius = Double(size) * random.uniform(0.08...0.18)
            let cy = random.uniform(radius...(Double(size) - radius))
            let cx = random.uniform(radius...(Double(size) - radius))
            for y in 0..<size {
                for x in 0..<size {
                    let (dy, dx) = (Double(y) + 0.5 - cy, Double(x) + 0.5 - cx)
                    let inside = isSquare ? max(abs(dy), abs(dx)) <= radius : dy * dy + dx * dx <= radius * radius
                    if inside { labels[y * size + x] = isSquare ? 2 : 1 }
                }
            }
        }
        let levels: [Double] = [50, 130, 210]
        let image = labels.map { label in
            UInt8(min(max(levels[Int(label)] + 12 * random.normal(), 0), 255).rounded())
        }
        return (image, labels)
    }
}
