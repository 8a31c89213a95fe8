/// A Core ML ML Program converted from the ONNX graph (not yet built).
public enum CoreMLExport: ModelExporter {
    public static func export(_ source: ExportSource, to path: String, options: ExportOptions) throws -> [String] {
        throw ExportError.unsupported(format: "coreml", reason: "not built yet")
    }
}
