import DICOM
import ImageFiles
import SliceLabDatasets
import SliceLabIO
import SliceLabInference
import SliceLabKit
import SliceLabResults

extension FuzzInput {
    /// The most elements the HDF5 image and label loaders are given here (16 Mi): a few KB of chunked HDF5
    /// can legally describe gigabytes of fill values, which would make every such input a 2 s timeout rather
    /// than a test of the reader. The product's own bound is the reader's limit (issue #10, bounds).
    public static let maxHDF5Elements = 1 << 24

    /// Reads `path` as every command reads an outside image or label file: the image loader (segment, cluster,
    /// labeled sets) and the label loader (evaluate); each returns or throws `ImageFileError` / `InputError` /
    /// `DICOMError`.
    public static func readAsImageAndLabels(_ path: String) {
        // Formats are found by content, so any input may be read as DICOM (issue #17).
        let isTyped: (Error) -> Bool = { $0 is ImageFileError || $0 is InputError || $0 is DICOMError }
        if path.hasSuffix(".h5") {
            var within: (image: Bool, labels: Bool) = (false, false)
            expectTypedError(file: path, isTyped: isTyped) {
                let file = try HDF5File.open(path)
                within = (try isWithinBound(file, "/image"), try isWithinBound(file, "/labels"))
            }
            if within.image { expectTypedError(file: path, isTyped: isTyped) { _ = try ImageLoader.load(path) } }
            if within.labels { expectTypedError(file: path, isTyped: isTyped) { _ = try LoadedLabels.read(path) } }
            return
        }
        expectTypedError(file: path, isTyped: isTyped) { _ = try ImageLoader.load(path) }
        expectTypedError(file: path, isTyped: isTyped) { _ = try LoadedLabels.read(path) }
    }

    /// Whether the dataset is missing (the loader's error is then the one to check) or within `maxHDF5Elements`.
    private static func isWithinBound(_ file: HDF5File, _ dataset: String) throws -> Bool {
        guard file.exists(dataset), (try? file.kind(of: dataset)) == .dataset else { return true }
        let (count, overflow) = try file.shape(of: dataset).reduce((1, false)) {
            let (product, flag) = $0.0.multipliedReportingOverflow(by: $1)
            return (product, $0.1 || flag)
        }
        return !overflow && count <= maxHDF5Elements
    }
}
