import Foundation
import SliceLabSupport

/// A Core ML ML Program (`.mlpackage`) with Apple's DeepLabV3 interface: input `image` (an image of the fixed
/// `--size`, RGB or grayscale as the model's channels, pixels scaled by 1/255), output `semanticPredictions`
/// Int32 [H, W]. The ONNX export's graph is converted op by op with coremltools' MIL builder
/// (`coreml_converter.py`, run by Python: `SLICELAB_PYTHON`, else the package's `.venv`).
public enum CoreMLExport: ModelExporter {
    public static func export(_ source: ExportSource, to path: String, options: ExportOptions) throws -> [String] {
        guard path.hasSuffix(".mlpackage") else {
            throw ExportError.unsupported(format: "coreml", reason: "\(path): the output must be a .mlpackage folder")
        }
        guard let script = Bundle.module.path(forResource: "coreml_converter", ofType: "py") else {
            throw ExportError.converter(format: "coreml", message: "coreml_converter.py is missing from the bundle")
        }
        let python = try interpreter()
        let onnx = try ONNXExport.model(source)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("slicelab-coreml-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let onnxPath = folder.appendingPathComponent("model.onnx").path
        try onnx.save(to: onnxPath)
        try writeFolderAtomically(to: path) { temporary in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = [script, onnxPath, temporary, String(options.size.height), String(options.size.width)]
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                let last =
                    text.split(separator: "\n").last.map(String.init) ?? "exit status \(process.terminationStatus)"
                throw ExportError.converter(format: "coreml", message: last)
            }
        }
        return [
            "wrote \(path) (ML Program, input image \(options.size.height) × \(options.size.width), output "
                + "semanticPredictions Int32; converted by coremltools with \(python))"
        ]
    }

    /// `SLICELAB_PYTHON`, else the `.venv/bin/python` of the package the executable was built in.
    static func interpreter() throws -> String {
        if let python = ProcessInfo.processInfo.environment["SLICELAB_PYTHON"] { return python }
        var folder = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath()
            .deletingLastPathComponent()
        while folder.path != "/" {
            let candidate = folder.appendingPathComponent(".venv/bin/python").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            folder.deleteLastPathComponent()
        }
        throw ExportError.converter(
            format: "coreml",
            message: "no Python found: set SLICELAB_PYTHON to a Python "
                + "with coremltools and onnx installed (pip install coremltools onnx)")
    }
}
