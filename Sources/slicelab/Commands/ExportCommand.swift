import SliceLabKit

/// `slicelab export MODEL.h5 --format onnx|coreml|torchvision --out PATH` (issue #21).
enum ExportCommand: Command {
    static let spec = CommandSpec(
        name: "export",
        summary: "Export a checkpoint to ONNX, Core ML or torchvision's safetensors.",
        positionals: [PositionalSpec("MODEL.h5", help: "A SliceLab checkpoint.")],
        options: [
            OptionSpec("format", .choice(of: ExportFormat.self), help: "The format to write."),
            OptionSpec(
                "out", valueName: "PATH",
                help: "OUT.onnx, OUT.mlpackage, or (torchvision) a PREFIX for PREFIX.safetensors and PREFIX.json."),
            OptionSpec("size", valueName: "H,W", help: "Core ML: the fixed input size.", default: "513,513")
        ])

    static func run(_ arguments: ParsedArguments) throws {
        guard let model = arguments.positional(0), let format: ExportFormat = arguments.choice("format"),
            let out = arguments.string("out")
        else {
            throw UsageError("slicelab export: give MODEL.h5, --format onnx|coreml|torchvision and --out PATH")
        }
        var options = ExportOptions()
        if let text = arguments.string("size") {
            let parts = text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2, parts.allSatisfy({ (1...8192).contains($0) }) else {
                throw UsageError("slicelab export: --size takes H,W in pixels (1…8192 each), not '\(text)'")
            }
            options.size = (parts[0], parts[1])
        }
        for note in try ExportWorkflow.run(checkpoint: model, format: format, output: out, options: options) {
            standardError("slicelab export: \(note)")
        }
    }
}
