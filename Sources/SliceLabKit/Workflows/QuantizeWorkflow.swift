import DeepLab
import Foundation
import ImageFiles
import SliceLabDatasets
import SliceLabIO
import SliceLabSupport

public typealias CalibrationMethod = DeepLab.CalibrationMethod
public typealias Precision = DeepLab.Precision

/// Errors of `slicelab quantize` that are not the data set's or the model's.
public enum QuantizeError: Error, CustomStringConvertible, Equatable {
    /// The calibration split has no cases (or `--cases 0` left none).
    case emptyCalibrationSet(dataset: String, split: String, available: [String])
    /// The checkpoint given is already quantised.
    case alreadyQuantized(model: String)

    public var description: String {
        switch self {
        case .emptyCalibrationSet(let dataset, let split, let available):
            return "\(dataset): the calibration split '\(split)' has no cases (splits with cases: "
                + (available.isEmpty ? "none" : available.joined(separator: ", ")) + ")"
        case .alreadyQuantized(let model):
            return "\(model): already an int8 checkpoint; quantize the float32 checkpoint it was made from"
        }
    }
}

/// `slicelab quantize MODEL.h5 --calibrate DATASET --out MODEL-int8.h5`: post-training static quantisation of a
/// float32 checkpoint with calibration slices from a labeled set.
public enum QuantizeWorkflow {
    /// The most slices calibration runs by default (spread evenly over the chosen cases).
    public static let defaultSliceLimit = 64
    /// The calibration method `quantize` uses without `--method` (chosen by measurement, see the README).
    public static let defaultMethod = CalibrationMethod.percentile

    public struct Options: Sendable {
        public var model: String
        public var dataset: String
        public var split = "train"
        /// Cases from the split's start; nil: all of them.
        public var cases: Int?
        public var sliceLimit = QuantizeWorkflow.defaultSliceLimit
        public var method = QuantizeWorkflow.defaultMethod
        public var output: String
        public var threads: Int?
        public var limits = ReadLimits.standard
        /// Also write the calibration slices as the network saw them (for peers calibrating on the same data).
        public var calibrationInputs: String?

        public init(model: String, dataset: String, output: String) {
            self.model = model
            self.dataset = dataset
            self.output = output
        }
    }

    /// Calibrates, then writes the checkpoint with its `/quantization` group (atomically).
    ///
    /// - Returns: the quantisation written.
    /// - Throws: `QuantizeError`, `DatasetError`, `DatasetError.classCountMismatch`, `DeepLabError`,
    ///   `ImageFileError`.
    @discardableResult
    public static func run(_ options: Options, log: (String) -> Void = { _ in }) throws -> ModelQuantization {
        if let threads = options.threads { setComputeThreads(threads) }
        let (model, preprocessing) = try DeepLabCheckpoint.load(options.model)
        guard model.quantization == nil else { throw QuantizeError.alreadyQuantized(model: options.model) }
        let set = try LabeledSet.open(options.dataset, limits: options.limits)
        let names = Array(set.cases(in: options.split).prefix(options.cases ?? Int.max))
        guard !names.isEmpty else {
            throw QuantizeError.emptyCalibrationSet(
                dataset: options.dataset, split: options.split,
                available: set.splits.filter { !$0.value.isEmpty }.keys.sorted())
        }
        guard model.configuration.classCount == set.classCount else {
            throw DatasetError.classCountMismatch(
                model: options.model, modelClasses: model.configuration.classCount,
                dataset: options.dataset, datasetClasses: set.classCount)
        }
        // Every (case, frame) pair, then at most `sliceLimit` of them evenly spaced.
        let samples = try names.map { try set.load($0) }
        let slices = samples.indices.flatMap { c in (0..<samples[c].frameCount).map { (c, $0) } }
        let chosen = evenlySpaced(slices.count, at: options.sliceLimit).map { slices[$0] }
        let calibrator = try Calibrator(model: model, method: options.method)
        let images = samples.map(ScanImage.init)
        var inputs: [FloatTensor] = []
        for (c, frame) in chosen {
            let input = images[c].networkInput(
                frame: frame, channels: model.configuration.inputChannels,
                preprocessing: preprocessing)
            try calibrator.observe(input)
            if options.calibrationInputs != nil { inputs.append(input) }
        }
        if let path = options.calibrationInputs {
            try HDF5File.write(to: path, updating: false) { file in
                for (i, input) in inputs.enumerated() {
                    try file.write(input.values, shape: input.shape, to: String(format: "/calibration/%04d", i))
                }
            }
        }
        let quantization = try calibrator.quantization(
            calibrationSet: set.description.name, split: options.split,
            caseCount: names.count)
        try model.apply(quantization)
        try DeepLabCheckpoint.save(model, preprocessing: preprocessing, to: options.output)
        // The source's other root attributes (class names, slice sampling, the training record with its crop) travel
        // with the model, so that `segment` names, slices and tiles the int8 model as the float one.
        let source = try HDF5File.open(options.model)
        let written = Set(try HDF5File.open(options.output).attributeNames())
        try HDF5File.write(to: options.output) { file in
            for name in try source.attributeNames() where !written.contains(name) {
                try file.setAttribute(name, try source.attribute(name))
            }
        }
        log(
            "quantize: \(quantization.units.count) units in int8, \(quantization.floatUnits.count) in float32; "
                + "\(options.method.rawValue) calibration on \(chosen.count) slices of \(names.count) \(options.split) "
                + "cases of \(set.description.name)")
        return quantization
    }

    /// `count` indices of 0..<total spread evenly (all of them when total ≤ count).
    static func evenlySpaced(_ total: Int, at count: Int) -> [Int] {
        guard total > count else { return Array(0..<total) }
        return (0..<count).map { $0 * total / count }
    }
}
