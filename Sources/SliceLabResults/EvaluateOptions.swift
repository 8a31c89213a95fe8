import Foundation
import Metrics
import SliceLabDatasets
import SliceLabIO

/// What `evaluate` was asked to do; recorded as the run's `config` attribute (JSON).
public struct EvaluateOptions: Codable, Sendable, Equatable {
    public var prediction: String
    public var reference: String
    /// (slice, row, column) mm for files that carry none; two values mean (row, column) with slice 1.
    public var spacing: [Double]?
    public var classCount: Int?
    public var classNames: [String]?
    public var toleranceMM: Double
    public var hd95: HD95Definition
    public var empty: EmptyRule
    public var output: String
    public var runName: String?
    public var overwrite: Bool
    public var bootstrapSeed: UInt64
    public var bootstrapResamples: Int
    /// Evaluate only this shard of the cases (`--shard I/N`) and write a part for `slicelab merge`.
    public var shard: Shard?
    /// Classes (names or label values) scored lesion by lesion too (`--lesion-classes`); nil takes a dataset
    /// reference's `lesion_classes`.
    public var lesionClasses: [String]?
    /// The prediction's class probabilities (`--prob`): a file with `/probabilities` [frames, K, rows, columns]
    /// (as `segment --probabilities` writes it) or a folder of them paired by stem; adds the calibration metrics.
    public var probabilities: String?
    /// How named structures (RTSTRUCT ROIs, Slicer segments) become classes (`--roi`; nil: by `classNames` when
    /// given, else file order) and where they overlap (`--overlap`).
    public var roi: String?
    public var overlap: StructureMapping.Overlap?
    /// The image series a structure set lies on (`--ref-series`); nil finds the referenced series beside it.
    public var referenceSeries: String?

    /// The label reading options these give.
    ///
    /// - Throws: `InputError.invalidOption` for a bad `roi`.
    public func labelReading() throws -> LabelReadingOptions {
        var mapping = StructureMapping(overlap: overlap ?? .later)
        if let roi {
            mapping = try StructureMapping(parsing: roi, overlap: mapping.overlap)
        } else if let classNames {
            mapping.rule = .classNames(classNames)
        }
        return LabelReadingOptions(mapping: mapping, reference: referenceSeries)
    }

    public init(
        prediction: String, reference: String, output: String, spacing: [Double]? = nil,
        classCount: Int? = nil, classNames: [String]? = nil, toleranceMM: Double = 1,
        hd95: HD95Definition = .max, empty: EmptyRule = .nan, runName: String? = nil,
        overwrite: Bool = false, bootstrapSeed: UInt64 = 0, bootstrapResamples: Int = 2000
    ) {
        (self.prediction, self.reference, self.output, self.spacing) = (prediction, reference, output, spacing)
        (self.classCount, self.classNames, self.toleranceMM) = (classCount, classNames, toleranceMM)
        (self.hd95, self.empty, self.runName, self.overwrite) = (hd95, empty, runName, overwrite)
        (self.bootstrapSeed, self.bootstrapResamples) = (bootstrapSeed, bootstrapResamples)
    }

    /// The run name: `--run`, else the prediction file's or folder's name without extension.
    public var resolvedRunName: String {
        runName ?? URL(fileURLWithPath: prediction).deletingPathExtension().lastPathComponent
    }
}
