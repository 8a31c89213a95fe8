import DeepLabTraining
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabSupport

/// `slicelab dataset export PATH --format nnunet --out DIR --id N`: any set SliceLab reads written as an nnU-Net
/// v2 raw dataset, `DIR/DatasetNNN_<name>/`, that nnU-Net's `verify_dataset_integrity` accepts.
///
/// Every case becomes NIfTI (`.nii.gz`): one Float32 file per channel, `imagesTr/{case}_{XXXX}.nii.gz`, and a
/// label map `labelsTr/{case}.nii.gz` (uint8, uint16 above 255 classes) on the same geometry: the case's own for
/// NIfTI sources, else its spacing with origin 0 and identity direction (a 2-D image is one slice).
/// `dataset.json` has `channel_names`, `labels` (class 0 named "background", as nnU-Net requires), `numTraining`
/// and `file_ending`. From SliceLab's own layout, the `train` and `val` cases go to `imagesTr/`/`labelsTr/` with
/// a one-fold `splits_final.json` (train, val) beside `dataset.json`, and the `test` cases to `imagesTs/` with
/// their labels in `labelsTs/`; from an nnU-Net or Decathlon set every labeled case goes to `imagesTr/`.
public enum DatasetExport {
    public struct Options: Sendable {
        public var dataset: String
        public var output: String
        public var id: Int
        public var limits: ReadLimits = .standard
        public var selection = SplitSelection()

        public init(dataset: String, output: String, id: Int) {
            (self.dataset, self.output, self.id) = (dataset, output, id)
        }
    }

    /// The folder name nnU-Net expects: `Dataset` + the id on three digits + `_` + the name with every character
    /// outside [A-Za-z0-9-] replaced by `_`.
    public static func folderName(id: Int, name: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
        let cleaned = String(name.map { allowed.contains($0) ? $0 : "_" })
        return String(format: "Dataset%03d_", id) + (cleaned.isEmpty ? "set" : cleaned)
    }

    /// Writes the export atomically (a folder appears whole or not at all) and returns its path.
    ///
    /// - Throws: `DatasetError` for the set, `InputError.unsupportedOutput` for an id outside 1…999 or an
    ///   existing destination, `ImageFileError` naming a file that cannot be written.
    @discardableResult
    public static func run(_ options: Options, log: (String) -> Void = { _ in }) throws -> String {
        guard (1...999).contains(options.id) else {
            throw InputError.unsupportedOutput(
                file: options.output,
                reason: "--id \(options.id): nnU-Net dataset "
                    + "ids are 1…999")
        }
        let set = try LabeledSet.open(options.dataset, limits: options.limits, selection: options.selection)
        let destination = URL(fileURLWithPath: options.output)
            .appendingPathComponent(folderName(id: options.id, name: set.description.name)).path
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw InputError.unsupportedOutput(
                file: destination,
                reason: "exists already; remove it or choose "
                    + "another --id or --out")
        }
        try prepareOutputLocation(options.output, isFolder: true)
        try FileManager.default.createDirectory(atPath: options.output, withIntermediateDirectories: true)
        let own = set.layout == "slicelab"
        let training = own ? set.cases(in: "train") + set.cases(in: "val") : set.files.keys.sorted()
        let test = own ? set.cases(in: "test") : []
        var channelNames = set.channelNames
        try writeFolderAtomically(to: destination) { folder in
            for (cases, images, labels) in [(training, "imagesTr", "labelsTr"), (test, "imagesTs", "labelsTs")]
            where !cases.isEmpty {
                for sub in [images, labels] {
                    try FileManager.default.createDirectory(
                        atPath: "\(folder)/\(sub)",
                        withIntermediateDirectories: true)
                }
                for name in cases {
                    let sample = try set.load(name)
                    let channels = try write(sample, images: "\(folder)/\(images)", labels: "\(folder)/\(labels)")
                    if channelNames.isEmpty {
                        let modality = set.description.modality
                        channelNames =
                            channels == 3
                            ? ["R", "G", "B"]
                            : (0..<channels).map { $0 == 0 ? modality : "\(modality)\($0)" }
                    }
                    log(name)
                }
            }
            var labels: [String: Int] = [:]
            for (value, name) in set.description.classes.enumerated() {
                labels[value == 0 ? "background" : name] = value
            }
            var description: [String: Any] = [
                "name": set.description.name,
                "channel_names": Dictionary(uniqueKeysWithValues: channelNames.enumerated().map { ("\($0)", $1) }),
                "labels": labels, "numTraining": training.count, "file_ending": ".nii.gz",
                "description": "Exported by slicelab \(sliceLabVersion) from \(set.folder.path) "
                    + "(\(set.layout) layout)"
            ]
            if !test.isEmpty { description["numTest"] = test.count }
            try writeJSON(description, to: "\(folder)/dataset.json")
            if own, !set.cases(in: "val").isEmpty {
                try writeJSON(
                    [["train": set.cases(in: "train").sorted(), "val": set.cases(in: "val").sorted()]],
                    to: "\(folder)/splits_final.json")
            }
        }
        return destination
    }

    /// Writes one case's channel files and label file; returns its channel count.
    static func write(_ sample: LabeledSample, images: String, labels: String) throws -> Int {
        let shape = sample.image.shape  // [F, C, H, W]
        let (frames, channels, rows, columns) = (shape[0], shape[1], shape[2], shape[3])
        let plane = rows * columns
        let geometry =
            sample.geometry
            ?? VolumeGeometry(
                spacing: sample.spacing, origin: [0, 0, 0],
                direction: VolumeGeometry.identity.direction)
        let dimensions = [columns, rows, frames]
        for channel in 0..<channels {
            var values = [Float](repeating: 0, count: frames * plane)
            for f in 0..<frames {
                let source = (f * channels + channel) * plane
                values.withUnsafeMutableBufferPointer { target in
                    for p in 0..<plane { target[f * plane + p] = sample.image.values[source + p] }
                }
            }
            try NIfTIImage.write(
                .float32(values), dimensions: dimensions, geometry: geometry,
                to: "\(images)/\(sample.name)_\(String(format: "%04d", channel)).nii.gz")
        }
        try NIfTIImage.write(
            .labels(sample.labels.values), dimensions: dimensions, geometry: geometry,
            to: "\(labels)/\(sample.name).nii.gz")
        return channels
    }

    static func writeJSON(_ object: Any, to path: String) throws {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        try writeAtomically(data, to: path)
    }
}
