import DeepLab
import ImageFiles
import ModelExport
import SliceLabIO

public typealias ExportFormat = ModelExport.ExportFormat
public typealias ExportOptions = ModelExport.ExportOptions

/// `slicelab export MODEL.h5 --format F --out PATH`: a checkpoint into another framework's format.
public enum ExportWorkflow {
    /// Loads the checkpoint, refusing what is not a float SliceLab checkpoint, and runs the format's exporter.
    ///
    /// - Returns: notes for the user.
    /// - Throws: `InputError.invalidContent` for a file that is not a SliceLab checkpoint,
    ///   `ExportError.unsupported` for an int8 checkpoint or a model the format cannot express, the exporter's
    ///   errors otherwise.
    public static func run(
        checkpoint: String, format: ExportFormat, output: String,
        options: ExportOptions = ExportOptions()
    ) throws -> [String] {
        let source = try load(checkpoint, format: format)
        return try format.exporter.export(source, to: output, options: options)
    }

    static func load(_ path: String, format: ExportFormat) throws -> ExportSource {
        let file = try HDF5File.open(path)
        guard file.hasAttribute("format"), try file.attribute("format").stringValue == DeepLabCheckpoint.format else {
            throw InputError.invalidContent(
                file: path,
                reason: "not a SliceLab checkpoint (no root attribute "
                    + "format = \"\(DeepLabCheckpoint.format)\"; write one with slicelab train)")
        }
        if file.exists("/parameters") {
            for name in try file.children(of: "/parameters") {
                let type = try file.elementType(of: "/parameters/\(name)")
                guard type == .float32 else {
                    throw ExportError.unsupported(
                        format: format.rawValue,
                        reason: "\(path): parameter \(name) is "
                            + "stored as \(type?.rawValue ?? "a non-float type (int8?)"), not float32; quantised (int8) "
                            + "checkpoints cannot be exported, since SliceLab has no int8 inference to check them against"
                    )
                }
            }
        }
        let (model, preprocessing) = try DeepLabCheckpoint.read(from: file)
        let k = model.configuration.classCount
        let named = try SegmentationExport.classNames(checkpoint: path, classCount: k)
        let names = ["background"] + (1..<k).map { named[$0] ?? "class \($0)" }
        return ExportSource(model: model, preprocessing: preprocessing, classNames: names, path: path)
    }
}
