import DeepLab
import Foundation
import SliceLabSupport

/// Writes a checkpoint as torchvision's `state_dict` in safetensors (`PREFIX.safetensors`: every parameter and
/// buffer under its torchvision key, batch norm un-folded as the checkpoint stores it, `num_batches_tracked` as
/// I64 scalars) and its configuration (`PREFIX.json`).
///
/// ResNet-50/101 load into torchvision's `deeplabv3_resnet50/101(num_classes=K, aux_loss=…)`; ResNet-18/34 into
/// `DeepLabV3(IntermediateLayerGetter(resnet18/34(…)), DeepLabHead(512, K), FCNHead(256, K))` with the dilated
/// BasicBlocks patched in (README). Only what those constructors build is accepted: output stride 8, ASPP rates
/// 12/24/36 and width 256, input scale 1, no multi-grid, a ResNet backbone.
public enum TorchvisionExport: ModelExporter {
    public static func export(_ source: ExportSource, to path: String, options: ExportOptions) throws -> [String] {
        let configuration = source.model.configuration
        try checkExpressible(configuration)
        let prefix = path.hasSuffix(".safetensors") ? String(path.dropLast(".safetensors".count)) : path
        let weights = prefix + ".safetensors"
        let description = prefix + ".json"
        let json = try configurationJSON(source)
        let tensors = safetensors(source.model.parameters, metadata: ["format": "pt", "producer": "slicelab"])
        try writeAtomically(tensors, to: weights)
        do {
            try writeAtomically(json, to: description)
        } catch {
            try? FileManager.default.removeItem(atPath: weights)
            throw error
        }
        var notes = ["wrote \(weights) (\(source.model.parameters.count) tensors) and \(description)"]
        if configuration.inputChannels == 1 {
            notes.append(
                "the model takes 1 channel: replace backbone.conv1 by nn.Conv2d(1, 64, 7, 2, 3, bias=False) "
                    + "before load_state_dict (README, Export)")
        }
        return notes
    }

    /// The torchvision callable that builds the model's modules ("" when torchvision has none).
    static func constructor(_ architecture: DeepLabConfiguration.Architecture) -> String {
        guard case .constructor(let name) = architecture.traits.torchvision else { return "" }
        return name
    }

    /// Throws `ExportError.unsupported` naming the first setting torchvision's constructors cannot build.
    static func checkExpressible(_ c: DeepLabConfiguration) throws {
        func refuse(_ reason: String) -> ExportError { .unsupported(format: "torchvision", reason: reason) }
        if c.decoder == .v3plus {
            throw refuse(
                "the model is DeepLabV3+, which torchvision has no constructor for; its parameters carry "
                    + "segmentation-models-pytorch's DeepLabV3Plus keys (export to ONNX, or load the checkpoint's "
                    + "weights into smp by name)")
        }
        if case .none(let reason) = c.architecture.traits.torchvision { throw refuse(reason) }
        if c.asppChannels != 256 {
            throw refuse("ASPP width is \(c.asppChannels); torchvision's DeepLabHead has 256 channels")
        }
        if c.atrousRates != [12, 24, 36] {
            throw refuse("atrous rates are \(c.atrousRates); torchvision's DeepLabHead uses [12, 24, 36]")
        }
        if c.outputStride != 8 {
            throw refuse(
                "output stride is \(c.outputStride); torchvision's DeepLabV3 dilates layer3 and layer4 "
                    + "(output stride 8)")
        }
        if c.inputScale != 1 {
            throw refuse("input scale is \(c.inputScale); torchvision's DeepLabV3 does not resample its input")
        }
        if let grid = c.multiGrid {
            throw refuse("multi-grid \(grid) is set; torchvision's ResNet has one dilation per stage")
        }
    }

    static func configurationJSON(_ source: ExportSource) throws -> Data {
        let c = source.model.configuration
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let slicelab = try JSONSerialization.jsonObject(with: encoder.encode(c))
        let preprocessing = try JSONSerialization.jsonObject(with: Data(source.preprocessing.json.utf8))
        let object: [String: Any] = [
            "arch": c.architecture.rawValue,
            "constructor": constructor(c.architecture),
            "num_classes": c.classCount,
            "in_channels": c.inputChannels,
            "aux_loss": c.auxiliaryHead,
            "output_stride": c.outputStride,
            "atrous_rates": c.atrousRates,
            "aspp_channels": c.asppChannels,
            "class_names": source.classNames,
            "preprocessing": preprocessing,
            "slicelab_configuration": slicelab
        ]
        return try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    }

    /// A safetensors file: an 8-byte little-endian header length, the JSON header (padded with spaces to a
    /// multiple of 8), then the tensors' bytes. Float32 as F32; `num_batches_tracked` as I64.
    static func safetensors(_ parameters: [Parameter], metadata: [String: String]) -> Data {
        var header =
            "{\"__metadata__\":{"
            + metadata.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\($0.value)\"" }.joined(separator: ",") + "}"
        var body = Data()
        for p in parameters {
            let start = body.count
            let integer = p.name.hasSuffix("num_batches_tracked")
            if integer {
                for v in p.value { withUnsafeBytes(of: Int64(v).littleEndian) { body.append(contentsOf: $0) } }
            } else {
                p.value.withUnsafeBytes { body.append(contentsOf: $0) }
            }
            let shape = p.shape.map(String.init).joined(separator: ",")
            header +=
                ",\"\(p.name)\":{\"dtype\":\"\(integer ? "I64" : "F32")\",\"shape\":[\(shape)],"
                + "\"data_offsets\":[\(start),\(body.count)]}"
        }
        header += "}"
        while header.utf8.count % 8 != 0 { header += " " }
        var file = Data()
        withUnsafeBytes(of: UInt64(header.utf8.count).littleEndian) { file.append(contentsOf: $0) }
        file.append(contentsOf: header.utf8)
        file.append(body)
        return file
    }
}
