import Foundation
import ImageFiles

/// SliceLab's native model file, in HDF5:
///
/// - `/parameters/<state_dict key>`: one float32 dataset per parameter and buffer, with PyTorch's shapes
///   (the layout `TrainingCheckpoint` reads and writes);
/// - root attributes `format` ("slicelab-deeplabv3"), `configuration` (JSON of `DeepLabConfiguration`) and
///   `preprocessing` (JSON of `Preprocessing`), so inference always rebuilds the model and prepares its input
///   as training did.
///
/// A quantised model adds `/quantization` (`ModelQuantization`), and loads as int8.
/// The trainer adds its own groups (`/training`, `/optimizer`, `/history`) to the same file.
public enum DeepLabCheckpoint {
    public static let format = "slicelab-deeplabv3"

    /// Writes the model's part into an open file (for a trainer composing a larger checkpoint).
    /// Rests on `HDF5File.write(_:shape:to:)`.
    public static func write(_ model: DeepLabV3, preprocessing: Preprocessing, into file: HDF5File) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try file.setAttribute("format", .string(format))
        try file.setAttribute(
            "configuration", .string(String(decoding: try encoder.encode(model.configuration), as: UTF8.self)))
        try file.setAttribute("preprocessing", .string(preprocessing.json))
        for p in model.parameters {
            try file.write(p.value, shape: p.shape, to: "/parameters/\(p.name)")
        }
        try model.quantization?.write(into: file)
    }

    /// Saves a checkpoint atomically; `extra` may add groups to the same file before it is closed.
    public static func save(
        _ model: DeepLabV3, preprocessing: Preprocessing, to path: String,
        extra: ((HDF5File) throws -> Void)? = nil
    ) throws {
        try HDF5File.write(to: path, updating: false) { file in
            try write(model, preprocessing: preprocessing, into: file)
            try extra?(file)
        }
    }

    /// Rebuilds the model a checkpoint describes and loads its parameters.
    ///
    /// - Throws: `DeepLabError.invalidCheckpoint` for a file without the configuration or a parameter of the
    ///   wrong shape, `ImageFileError` when the file cannot be read.
    public static func load(_ path: String) throws -> (model: DeepLabV3, preprocessing: Preprocessing) {
        try read(from: HDF5File.open(path))
    }

    /// Whether the checkpoint at `path` is quantised (has a `/quantization` group), without loading it.
    public static func isQuantized(_ path: String) throws -> Bool {
        try HDF5File.open(path).exists(ModelQuantization.group)
    }

    /// The model configuration a checkpoint stores.
    ///
    /// - Throws: `DeepLabError.invalidCheckpoint` when the attribute is missing or is not a configuration.
    public static func configuration(in file: HDF5File) throws -> DeepLabConfiguration {
        guard file.hasAttribute("configuration"), let json = try file.attribute("configuration").stringValue else {
            throw DeepLabError.invalidCheckpoint(
                file: file.path,
                reason: "no 'configuration' attribute (was it "
                    + "written by slicelab train or segment?)")
        }
        do {
            return try JSONDecoder().decode(DeepLabConfiguration.self, from: Data(json.utf8))
        } catch {
            throw DeepLabError.invalidCheckpoint(
                file: file.path,
                reason: "the configuration attribute is not a "
                    + "DeepLabV3 configuration: \(error)")
        }
    }

    /// Reads from an open file (see `load`).
    public static func read(from file: HDF5File) throws -> (model: DeepLabV3, preprocessing: Preprocessing) {
        func bad(_ reason: String) -> DeepLabError { .invalidCheckpoint(file: file.path, reason: reason) }
        let configuration = try self.configuration(in: file)
        var preprocessing = Preprocessing.none
        if file.hasAttribute("preprocessing"), let text = try file.attribute("preprocessing").stringValue {
            do {
                preprocessing = try JSONDecoder().decode(Preprocessing.self, from: Data(text.utf8))
            } catch {
                throw bad("the preprocessing attribute cannot be read: \(error)")
            }
        }
        let model = try DeepLabV3(configuration)
        do {
            try TrainingCheckpoint.readParameters(model.parameters, from: file)
        } catch let DeepLabError.invalidCheckpoint(_, reason) {
            throw bad(reason)
        }
        do {
            try model.apply(ModelQuantization.read(from: file))
        } catch let DeepLabError.invalidConfiguration(reason) {
            throw bad(reason)
        }
        return (model, preprocessing)
    }
}
