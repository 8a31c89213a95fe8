import DeepLab
import Foundation
import SliceLabSupport

/// What every exporter receives: a loaded checkpoint, its preprocessing and class names.
public struct ExportSource {
    public let model: DeepLabV3
    public let preprocessing: Preprocessing
    /// Names of classes 0..<K (background first).
    public let classNames: [String]
    /// The checkpoint's path, for messages.
    public let path: String

    public init(model: DeepLabV3, preprocessing: Preprocessing, classNames: [String], path: String) {
        self.model = model
        self.preprocessing = preprocessing
        self.classNames = classNames
        self.path = path
    }
}

/// Writes a DeepLabV3 checkpoint as an ONNX model (opset 17) through ONNX's own library, whose checker and
/// shape inference run on every export.
///
/// Interface: input `image` Float32 [N, C, H, W], already normalised as the checkpoint's preprocessing says;
/// outputs `logits` Float32 [N, K, H, W] and `labels` Int64 [N, H, W] (argmax over classes); N, H and W are
/// dynamic. `metadata_props`: `slicelab.preprocessing` (the checkpoint's JSON), `slicelab.configuration`,
/// `slicelab.class_names` (JSON array) and `slicelab.input_layout`.
public enum ONNXExport {
    /// The opset the graph's operators are taken from (`Shape` with start/end needs 15; 17 is asked for).
    public static let opset = 17

    /// The version of the ONNX library that checks and writes the models.
    public static var libraryVersion: String { ONNXModel.libraryVersion }

    /// Builds, checks, infers shapes of and atomically writes the model to `path`.
    ///
    /// - Throws: `ExportError.onnx` when ONNX's checker or shape inference refuses the graph or the file cannot
    ///   be written. Rests on `connx_check_and_infer` and `connx_save`.
    public static func write(_ source: ExportSource, to path: String) throws {
        let onnx = try model(source)
        try writeAtomically(to: path) { temporary in try onnx.save(to: temporary) }
    }

    /// The checked model with shapes inferred, ready to save.
    static func model(_ source: ExportSource) throws -> ONNXModel {
        let graph = source.model.inferenceGraph()
        let onnx = try ONNXModel(graphName: source.model.configuration.architecture.rawValue, opset: opset)
        onnx.setProducer("slicelab", version: sliceLabExportVersion)
        for (key, value) in metadata(source) { onnx.addMetadata(key, value) }
        for constant in graph.constants {
            switch constant.values {
            case .float(let values): try onnx.addInitializer(constant.name, shape: constant.shape, floats: values)
            case .int64(let values): try onnx.addInitializer(constant.name, shape: constant.shape, integers: values)
            }
        }
        let float = ONNXElementType.float
        let int64 = ONNXElementType.int64
        try onnx.addValue(
            graph.input, output: false, elementType: float,
            dims: [(nil, "N"), (graph.inputChannels, ""), (nil, "H"), (nil, "W")])
        for node in graph.nodes { try onnx.addNode(node) }
        try onnx.addValue(
            graph.logits, output: true, elementType: float,
            dims: [(nil, "N"), (graph.classCount, ""), (nil, "H"), (nil, "W")])
        try onnx.addValue(graph.labels, output: true, elementType: int64, dims: [(nil, "N"), (nil, "H"), (nil, "W")])
        try onnx.checkAndInferShapes()
        return onnx
    }

    /// The `metadata_props` entries: how to prepare the input, and what the classes are.
    static func metadata(_ source: ExportSource) -> [(String, String)] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let configuration = (try? encoder.encode(source.model.configuration)).map {
            String(decoding: $0, as: UTF8.self)
        }
        let names = (try? encoder.encode(source.classNames)).map { String(decoding: $0, as: UTF8.self) }
        return [
            ("slicelab.preprocessing", source.preprocessing.json),
            ("slicelab.configuration", configuration ?? "{}"),
            ("slicelab.class_names", names ?? "[]"),
            (
                "slicelab.input_layout",
                "image: float32 [N, C, H, W], normalised as slicelab.preprocessing says "
                    + "(1-channel models: gray; 3-channel: RGB)"
            ),
            (
                "slicelab.tiling",
                "segment tiles as nnU-Net does: square tiles of the training crop at network scale (input pixels "
                    + "x the model's input scale), a step of half a tile, logits blended by a Gaussian (sigma = "
                    + "tile / 8); an image no larger than a tile runs whole, as this graph runs any image; segment "
                    + "--tile-size 0 does the same"
            )
        ]
    }
}

/// The producer version written into exported files.
let sliceLabExportVersion = "1"
