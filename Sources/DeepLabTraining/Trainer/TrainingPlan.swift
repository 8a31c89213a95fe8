import Classical
import DeepLab
import Foundation
import SliceLabSupport

/// The defaults `train` derives from the training cases' fingerprint, as nnU-Net's experiment planner derives
/// its configurations (`nnunetv2/experiment_planning/experiment_planners`): crop size, input scale and output
/// stride, batch size and normalisation, each overridable by its flag. Printed before training and stored in
/// the checkpoint as the JSON attribute `plan`, with the fingerprint it came from.
///
/// The rules (README, "Training plan"):
/// - crop: the median image side (rows or columns, the larger) rounded up to a multiple of 8, at most 512; then
///   shrunk by quarters (not below 64) while fewer than 2 samples fit the memory budget.
/// - decoder, output stride and input scale: the effective stride (the logits' stride over the scale) is the
///   largest for which the typical smallest structure (the smaller of a disc's diameter from its area and its
///   local thickness, `DatasetFingerprint.ClassStructures.typicalSizePixels`) spans at least `minimumCells` output
///   cells. DeepLabV3 when the structure spans them at stride 8 unscaled (stride 16 when it spans 2 × that many
///   at 16); else DeepLabV3+ (Chen et al. 2018), whose decoder gives logits at stride 4 from stride-16 features,
///   rather than upscaling the input (4 or 16 × the pixels), with scale 1, 2 or 4 (the
///   first that reaches the cells at stride 4, else 4). With the decoder or scale given, the rest is planned for
///   it as before (a given DeepLabV3 scales 1, 2 or 4 at stride 8). The scaled crop is at most 1024 pixels.
/// - batch: as many samples as the memory budget holds at the estimated bytes per sample, from 2 to 8, a
///   multiple of the ranks of a data-parallel job.
/// - normalisation: `dataset.json`'s `preprocessing` when it has one; else by the first channel's modality:
///   CT → clip to the foreground's 0.5–99.5 percentiles and z-score with its mean and standard deviation
///   (`Preprocessing.clippedZScore`); anything else → per-image z-score.
public struct TrainingPlan: Codable, Equatable, Sendable {
    /// Where a part of the plan came from.
    public enum Source: String, Codable, Sendable {
        case plan, flag
        case datasetJSON = "dataset.json"
    }

    public var cropSize: Int
    /// The decoder; nil in plans written before decoders were planned (DeepLabV3).
    public var decoder: DeepLabConfiguration.Decoder?
    public var inputScale: Int
    public var outputStride: Int
    public var batchSize: Int
    public var preprocessing: Preprocessing
    /// The source of each part, keyed `crop`, `input_scale`, `output_stride`, `batch`, `normalize`.
    public var sources: [String: Source]
    /// The memory budget and the estimated training memory of one sample at the planned crop and scale.
    public var memoryBudgetBytes: Int
    public var estimatedBytesPerSample: Int
    /// The structure the stride was chosen for (class name, its size in pixels: `typicalSizePixels`) and how
    /// many output cells it spans at the chosen effective stride; nil without foreground.
    public var smallestStructure: String?
    public var smallestStructureSizePixels: Double?
    public var cellsAcrossSmallestStructure: Double?
    public var fingerprint: DatasetFingerprint

    /// The output cells the smallest structure should span (at least).
    public static let minimumCells = 4.0
    /// The largest planned crop side and scaled input side, in pixels.
    public static let maximumCrop = 512, maximumScaledInput = 1024
    public static let batchRange = 2...8

    /// What the user fixed: each nil part is planned.
    public struct Overrides: Sendable {
        public var cropSize: Int?
        public var decoder: DeepLabConfiguration.Decoder?
        public var inputScale: Int?
        public var outputStride: Int?
        public var batchSize: Int?
        public var preprocessing: Preprocessing?
        public init(
            cropSize: Int? = nil, decoder: DeepLabConfiguration.Decoder? = nil, inputScale: Int? = nil,
            outputStride: Int? = nil, batchSize: Int? = nil, preprocessing: Preprocessing? = nil
        ) {
            (self.cropSize, self.decoder, self.inputScale, self.outputStride) =
                (cropSize, decoder, inputScale, outputStride)
            (self.batchSize, self.preprocessing) = (batchSize, preprocessing)
        }
    }

    /// Plans from `fingerprint`.
    ///
    /// - Parameters:
    ///   - overrides: the flags given, each kept as is.
    ///   - datasetPreprocessing: `dataset.json`'s `preprocessing`, which comes before the modality rule.
    ///   - architecture: the model's architecture name, for the memory estimate (unknown names are estimated
    ///     as DeepLabV3-ResNet-50's).
    ///   - inputChannels: the network's input channels (context slices included).
    ///   - memoryBudgetBytes: the training memory one process may use.
    ///   - ranks: the ranks of a data-parallel job; the planned batch is a multiple of it.
    public static func make(
        fingerprint: DatasetFingerprint, overrides: Overrides = Overrides(),
        datasetPreprocessing: Preprocessing? = nil, architecture: String, inputChannels: Int,
        memoryBudgetBytes: Int, ranks: Int = 1
    ) -> TrainingPlan {
        var sources: [String: Source] = [:]
        func source(_ key: String, _ given: Bool) { sources[key] = given ? .flag : .plan }
        let structure = fingerprint.smallestStructure
        // Decoder, stride and scale first: the crop's memory depends on the scale.
        var decoder = overrides.decoder ?? .v3
        var stride = overrides.outputStride ?? 8
        var scale = overrides.inputScale ?? 1
        if let size = structure?.sizePixels {
            if overrides.decoder == nil, overrides.inputScale == nil,
                size * Double(scale) / Double(stride) < minimumCells
            {
                decoder = .v3plus
            }
            if overrides.outputStride == nil,
                decoder == .v3plus || size * Double(scale) / 16 >= 2 * minimumCells
            {
                stride = 16
            }
            if overrides.inputScale == nil {
                scale = inputScale(for: size, logitStride: decoder.logitStride(outputStride: stride))
            }
        }
        source("decoder", overrides.decoder != nil)
        source("output_stride", overrides.outputStride != nil)
        source("input_scale", overrides.inputScale != nil)
        let medianSide = Int(max(fingerprint.size.median[1], fingerprint.size.median[2]).rounded(.up))
        var crop = overrides.cropSize ?? min(maximumCrop, max(8, (medianSide + 7) / 8 * 8))
        if overrides.inputScale == nil {
            while scale > 1 && crop * scale > maximumScaledInput { scale /= 2 }
        }
        func bytes(_ crop: Int) -> Int {
            bytesPerSample(
                architecture: architecture, decoder: decoder, inputSide: crop * scale, outputStride: stride,
                inputChannels: inputChannels)
        }
        if overrides.cropSize == nil {
            while crop > 64 && memoryBudgetBytes / bytes(crop) < batchRange.lowerBound {
                crop = max(64, (crop * 3 / 4) / 8 * 8)
            }
        }
        source("crop", overrides.cropSize != nil)
        let ranks = max(1, ranks)
        let fits = max(batchRange.lowerBound, min(batchRange.upperBound, memoryBudgetBytes / bytes(crop)))
        let batch = overrides.batchSize ?? max(ranks, fits / ranks * ranks)
        source("batch", overrides.batchSize != nil)
        let preprocessing: Preprocessing
        if let given = overrides.preprocessing {
            preprocessing = given
            sources["normalize"] = .flag
        } else if let datasetPreprocessing {
            preprocessing = datasetPreprocessing
            sources["normalize"] = .datasetJSON
        } else {
            preprocessing = modalityPreprocessing(fingerprint)
            sources["normalize"] = .plan
        }
        let cells = structure.map { $0.sizePixels * Double(scale) / Double(decoder.logitStride(outputStride: stride)) }
        return TrainingPlan(
            cropSize: crop, decoder: decoder, inputScale: scale, outputStride: stride, batchSize: batch,
            preprocessing: preprocessing, sources: sources, memoryBudgetBytes: memoryBudgetBytes,
            estimatedBytesPerSample: bytes(crop), smallestStructure: structure?.name,
            smallestStructureSizePixels: structure?.sizePixels,
            cellsAcrossSmallestStructure: cells, fingerprint: fingerprint)
    }

    /// The modality rule: CT (the first channel's name, any case) → clip to the foreground's 0.5–99.5
    /// percentiles, z-score with its mean and standard deviation; else per-image z-score. A CT set without
    /// foreground (or with constant foreground) falls back to z-score too.
    /// - Parameter modality: the modality to assume instead of the first channel's name (`--normalize ct`).
    public static func modalityPreprocessing(
        _ fingerprint: DatasetFingerprint,
        modality: String? = nil
    ) -> Preprocessing {
        guard let first = fingerprint.intensities.first, (modality ?? first.name).uppercased() == "CT",
            first.sampledVoxels > 0,
            first.standardDeviation > 0
        else { return .zScore }
        return .clippedZScore(
            low: first.percentile00_5, high: first.percentile99_5, mean: first.mean,
            standardDeviation: first.standardDeviation)
    }

    /// Training memory of one sample, in bytes: the backbone's activations and gradients per input pixel (at the
    /// model's scaled input; `BackboneTraits.trainingBytesPerPixel`) at output stride 8, and 0.45 of that at
    /// stride 16 (the deepest stages, which hold most of it, have a quarter of the pixels there); DeepLabV3+ adds
    /// its decoder's stride-4 tensors (`decoderBytesPerPixel`).
    public static func bytesPerSample(
        architecture: String, decoder: DeepLabConfiguration.Decoder = .v3, inputSide: Int, outputStride: Int,
        inputChannels: Int
    ) -> Int {
        let perPixel = (DeepLabConfiguration.Architecture(rawValue: architecture) ?? .resnet50).traits
            .trainingBytesPerPixel
        let strideFactor = outputStride >= 16 ? 0.45 : 1
        let pixels = Double(inputSide * inputSide)
        let decoderBytes = decoder == .v3plus ? decoderBytesPerPixel : 0
        return Int(pixels * (perPixel * strideFactor + decoderBytes + Double(8 * inputChannels)))
    }

    /// DeepLabV3+'s decoder in training, per input pixel: about ten f32 tensors of 256–304 channels at stride 4
    /// kept for backward (resized ASPP output, projection, concatenation, depthwise, pointwise, batch norm and
    /// activation outputs) and as many gradients, 2 × 10 × 300 × 4 B / 16 — counted from the graph, not
    /// measured.
    public static let decoderBytesPerPixel = 1_500.0

    /// The first of the input scales 1, 2 and 4 at which a structure of `size` pixels spans `minimumCells` cells of
    /// logits at `logitStride`, else 4.
    static func inputScale(for size: Double, logitStride: Int) -> Int {
        [1, 2, 4].first { size * Double($0) / Double(logitStride) >= minimumCells } ?? 4
    }

    /// The decoder (DeepLabV3 for plans written before decoders were planned).
    public var planDecoder: DeepLabConfiguration.Decoder { decoder ?? .v3 }

    /// The plan in a few lines, saying which parts came from flags or `dataset.json`.
    public var lines: [String] {
        func from(_ key: String) -> String {
            switch sources[key] ?? .plan {
            case .flag: return " (flag)"
            case .datasetJSON: return " (dataset.json)"
            case .plan: return ""
            }
        }
        let f = fingerprint
        var lines: [String] = []
        let spacing =
            f.spacingMM.map { s in
                "spacing (mm) median " + s.median.map { String(format: "%.3g", $0) }.joined(separator: " × ")
            } ?? "no spacing"
        lines.append(
            "plan: fingerprint of \(f.caseCount) training cases (\(f.sliceCount) slices): size median "
                + f.size.median.map { String(format: "%.0f", $0) }.joined(separator: " × ") + ", " + spacing)
        if let name = smallestStructure, let size = smallestStructureSizePixels,
            let cells = cellsAcrossSmallestStructure
        {
            let measured = fingerprint.classes.first { $0.name == name }
            let across = measured.map { String(format: "%.1f px across by area", $0.typicalSmallestDiameterPixels) }
            let thick = measured?.typicalThicknessPixels.map {
                $0 >= LocalThickness.cap
                    ? String(format: "at least %.0f px thick", $0)
                    : String(format: "%.1f px thick", $0)
            }
            lines.append(
                String(
                    format: "plan: smallest structure %@: %.1f px (typical per case: %@), "
                        + "%.1f output cells at effective stride %g", name, size,
                    [across, thick].compactMap { $0 }.joined(separator: ", "), cells,
                    Double(planDecoder.logitStride(outputStride: outputStride)) / Double(inputScale)))
            if planDecoder == .v3plus, sources["decoder"] == .plan {
                let v3Scale = Self.inputScale(for: size, logitStride: 8)
                lines.append(
                    String(
                        format: "plan: decoder v3plus: DeepLabV3 at stride 8 gives it %.1f cells (fewer than %g) and "
                            + "would scale the input by %d; DeepLabV3+'s stride-4 logits give %.1f at scale %d",
                        size / 8, Self.minimumCells, v3Scale, cells, inputScale))
            }
        }
        lines.append(
            "plan: decoder \(planDecoder.rawValue)\(from("decoder")), "
                + "crop \(cropSize)\(from("crop")), input scale \(inputScale)\(from("input_scale")), "
                + "output stride \(outputStride)\(from("output_stride")), batch \(batchSize)\(from("batch")) "
                + String(
                    format: "(about %.0f MiB per sample, budget %.0f MiB)",
                    Double(estimatedBytesPerSample) / 1_048_576, Double(memoryBudgetBytes) / 1_048_576))
        lines.append("plan: normalize \(preprocessing.json)\(from("normalize"))")
        return lines
    }

    /// The plan as stored in the checkpoint's `plan` attribute (JSON, keys sorted).
    ///
    /// - Throws: `EncodingError` for a non-finite number (an image holding NaN or infinity).
    public func json() throws -> String {
        try SortedJSON.string(self)
    }
}
