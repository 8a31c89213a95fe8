/// torchvision's safetensors `state_dict` and a JSON configuration (not yet built).
public enum TorchvisionExport: ModelExporter {
    public static func export(_ source: ExportSource, to path: String, options: ExportOptions) throws -> [String] {
        throw ExportError.unsupported(format: "torchvision", reason: "not built yet")
    }
}
