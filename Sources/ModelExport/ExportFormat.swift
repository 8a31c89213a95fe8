/// An export format: one conforming type registered in `ExportFormat.exporter`.
public protocol ModelExporter {
    /// Writes `source` to `path` (a file, a file prefix or a folder, as the format needs), atomically: on any
    /// error nothing is left at `path`. Returns notes for the user (one line each).
    static func export(_ source: ExportSource, to path: String, options: ExportOptions) throws -> [String]
}

/// Options some formats take.
public struct ExportOptions: Sendable {
    /// Core ML's fixed input size (height, width) in pixels.
    public var size: (height: Int, width: Int)

    public init(size: (height: Int, width: Int) = (513, 513)) { self.size = size }
}

/// The formats `slicelab export --format` offers, in the order the CLI lists them.
public enum ExportFormat: String, CaseIterable, Sendable {
    case onnx
    case coreml
    case torchvision

    /// The exporter registered for this format.
    public var exporter: any ModelExporter.Type {
        switch self {
        case .onnx: return ONNXExport.self
        case .coreml: return CoreMLExport.self
        case .torchvision: return TorchvisionExport.self
        }
    }
}

extension ONNXExport: ModelExporter {
    public static func export(_ source: ExportSource, to path: String, options: ExportOptions) throws -> [String] {
        try write(source, to: path)
        return ["wrote \(path) (ONNX opset \(opset), checked and shape-inferred by ONNX \(libraryVersion))"]
    }
}
