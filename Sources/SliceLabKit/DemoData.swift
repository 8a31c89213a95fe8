import Foundation
import SliceLabIO
import SliceLabInference

/// The bundled data `slicelab demo` runs the main job on: three labeled sets (`mni-brain` and `brain-lesion`, 2-D
/// DICOM slices; `mni-brain-3d`, a NIfTI volume in nnU-Net v2 layout), each with its DeepLabV3 model. The demo
/// is `compare` on each of them (`CompareWorkflow`), with the classical baseline, into one results file, an HTML
/// report per set (the volume as a slice scroller), and overlay PNGs; this type says what to compare.
public enum DemoData {
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

    /// The `compare` run of one bundled set into `output`: `results.h5` (runs named `<set>.…`), `<set>/index.html`
    /// and `<set>/overlays/`.
    ///
    /// - Throws: `InputError.unsupportedFile` when the build has no bundled data.
    public static func compareOptions(set: String, output: String, threads: Int? = nil) throws
        -> CompareWorkflow.Options
    {
        let data = try dataFolder()
        return CompareWorkflow.Options(
            dataset: data.appendingPathComponent(set).path,
            model: data.appendingPathComponent("models/\(set).h5").path,
            classical: try classical.map(ClassicalSpec.init), split: "test", output: output + "/results.h5",
            report: output + "/" + set, threads: threads, overwrite: true, runPrefix: set + ".",
            overlays: output + "/" + set + "/overlays")
    }
}
