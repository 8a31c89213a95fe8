import Foundation
import SliceLabIO
import SliceLabInference

/// `slicelab demo`: the main job on the bundled data. For each bundled labeled set (`mni-brain` and
/// `brain-lesion`, 2-D DICOM slices; `mni-brain-3d`, a NIfTI volume in nnU-Net v2 layout) it runs `compare` with
/// the bundled DeepLabV3 model and the classical baseline, writing every run into one results file, an HTML
/// report per set (the volume as a slice scroller), and overlay PNGs.
public enum Demo {
    /// The bundled sets, each with its model `models/<set>.h5` beside it.
    public static let sets = ["mni-brain", "brain-lesion", "mni-brain-3d"]

    /// The classical configurations the demo compares against: k-means on intensity with its majority-vote
    /// mapping learned on the set's training cases, and multi-Otsu likewise.
    public static let classical = ["kmeans:space=gray,map=train-vote", "multiotsu:space=gray,map=train-vote"]

    /// The folder of the bundled data (a package resource, so found from any working directory).
    public static func dataFolder() throws -> URL {
        guard let url = Bundle.module.url(forResource: "Demo", withExtension: nil) else {
            throw InputError.unsupportedFile(
                file: Bundle.module.bundlePath,
                reason: "the bundled demo data is missing "
                    + "from this build; rebuild with 'make release'")
        }
        return url
    }

    /// Runs the demo into `output` (created if needed): `results.h5`, `<set>/index.html`, `<set>/overlays/`.
    ///
    /// - Returns: one compare outcome per set, in `sets` order.
    public static func run(
        output: String, threads: Int? = nil,
        log: (String) -> Void = { _ in }
    ) throws -> [(set: String, outcome: Compare.Outcome)] {
        let data = try dataFolder()
        do {
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        } catch {
            throw InputError.unsupportedOutput(
                file: output, reason: "cannot create the folder: \(error.localizedDescription)")
        }
        let results = output + "/results.h5"
        var outcomes: [(String, Compare.Outcome)] = []
        for set in sets {
            log("demo: \(set)")
            let options = Compare.Options(
                dataset: data.appendingPathComponent(set).path,
                model: data.appendingPathComponent("models/\(set).h5").path,
                classical: try classical.map(ClassicalSpec.init), split: "test", output: results,
                report: output + "/" + set, threads: threads, overwrite: true, runPrefix: set + ".",
                overlays: output + "/" + set + "/overlays")
            outcomes.append((set, try Compare.run(options)))
        }
        return outcomes.map { (set: $0.0, outcome: $0.1) }
    }
}
