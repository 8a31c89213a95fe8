import Foundation
import ImageFiles

/// The arithmetic a model runs in: float32, int8 (a quantised checkpoint, inference only), or bf16 (bf16
/// convolutions with f32 master weights, where oneDNN has bf16 instructions: `Bf16Support`).
public enum Precision: String, CaseIterable, Sendable {
    case fp32, int8, bf16
}

/// How activation ranges are chosen from the calibration statistics (`Calibrator`).
public enum CalibrationMethod: String, Codable, CaseIterable, Sendable {
    /// The largest magnitude seen.
    case minmax
    /// The 99.99th percentile of the magnitudes.
    case percentile
    /// The clipping threshold that minimises the KL divergence between the magnitudes' histogram and its
    /// quantised version (TensorRT's entropy calibration, Migacz 2017), exact zeros left out, among the
    /// thresholds that clip at most 0.1 % of the non-zero values.
    case entropy
}

/// One convolution unit's int8 parameters: x_q = round(x · inputScale) saturated to `inputType`, and
/// w_q[o] = round(w_folded[o] · weightScales[o]) in s8 (batch norm folded into the weights first).
public struct UnitQuantization: Codable, Equatable, Sendable {
    public var inputType: QuantizedType
    public var inputScale: Float
    public var weightScales: [Float]

    public init(inputType: QuantizedType, inputScale: Float, weightScales: [Float]) {
        self.inputType = inputType
        self.inputScale = inputScale
        self.weightScales = weightScales
    }
}

/// A model's post-training quantisation: the scales of every quantised convolution unit (keyed by its
/// `state_dict` prefix, `backbone.layer1.0.conv1`), the units kept in float32, and how the scales were made.
///
/// Stored in a checkpoint's `/quantization` group: attributes `scheme`, `method`, `calibration_set`, `split`,
/// `cases`, `slices`, `float_units`; per quantised unit a dataset `/quantization/<unit>/weight_scales` Float32
/// [O] with attributes `input_scale` and `input_type` ("u8" or "s8").
public struct ModelQuantization: Equatable, Sendable {
    public static let scheme =
        "slicelab-int8-1: x_q = round(x * input_scale), w_q = round(w_bn_folded * weight_scale[o])"

    public var method: CalibrationMethod
    public var calibrationSet: String
    public var split: String
    public var caseCount: Int
    public var sliceCount: Int
    public var units: [String: UnitQuantization]
    public var floatUnits: [String]

    public init(
        method: CalibrationMethod, calibrationSet: String, split: String, caseCount: Int, sliceCount: Int,
        units: [String: UnitQuantization], floatUnits: [String]
    ) {
        self.method = method
        self.calibrationSet = calibrationSet
        self.split = split
        self.caseCount = caseCount
        self.sliceCount = sliceCount
        self.units = units
        self.floatUnits = floatUnits
    }

    static let group = "/quantization"

    /// Writes the `/quantization` group into an open checkpoint. Rests on `HDF5File.write` and `setAttribute`.
    public func write(into file: HDF5File) throws {
        try file.createGroup(Self.group)
        try file.setAttribute("scheme", .string(Self.scheme), at: Self.group)
        try file.setAttribute("method", .string(method.rawValue), at: Self.group)
        try file.setAttribute("calibration_set", .string(calibrationSet), at: Self.group)
        try file.setAttribute("split", .string(split), at: Self.group)
        try file.setAttribute("cases", .int(Int64(caseCount)), at: Self.group)
        try file.setAttribute("slices", .int(Int64(sliceCount)), at: Self.group)
        try file.setAttribute("float_units", .strings(floatUnits), at: Self.group)
        for (name, unit) in units.sorted(by: { $0.key < $1.key }) {
            let path = "\(Self.group)/\(name)/weight_scales"
            try file.write(unit.weightScales, shape: [unit.weightScales.count], to: path)
            try file.setAttribute("input_scale", .double(Double(unit.inputScale)), at: path)
            try file.setAttribute("input_type", .string(unit.inputType.rawValue), at: path)
        }
    }

    /// The quantisation an open checkpoint stores, or nil when it has no `/quantization` group.
    ///
    /// - Throws: `DeepLabError.invalidCheckpoint` naming the file and what is missing or malformed.
    public static func read(from file: HDF5File) throws -> ModelQuantization? {
        guard file.exists(group) else { return nil }
        func bad(_ reason: String) -> DeepLabError { .invalidCheckpoint(file: file.path, reason: reason) }
        func text(_ name: String, at path: String = group) throws -> String {
            guard file.hasAttribute(name, at: path), let value = try file.attribute(name, at: path).stringValue else {
                throw bad("\(path) has no '\(name)' attribute")
            }
            return value
        }
        func number(_ name: String, at path: String = group) throws -> Double {
            guard file.hasAttribute(name, at: path), let value = try file.attribute(name, at: path).doubleValues?.first
            else { throw bad("\(path) has no numeric '\(name)' attribute") }
            return value
        }
        guard let method = CalibrationMethod(rawValue: try text("method")) else {
            throw bad("\(group): unknown calibration method '\(try text("method"))'")
        }
        var floatUnits: [String] = []
        if file.hasAttribute("float_units", at: group),
            case .strings(let names) = try file.attribute("float_units", at: group)
        {
            floatUnits = names
        }
        var units: [String: UnitQuantization] = [:]
        for name in try file.children(of: group) {
            let path = "\(group)/\(name)/weight_scales"
            guard file.exists(path) else { throw bad("\(group)/\(name) has no weight_scales") }
            guard let type = QuantizedType(rawValue: try text("input_type", at: path)) else {
                throw bad("\(path): input_type must be u8 or s8")
            }
            let scale = Float(try number("input_scale", at: path))
            let weights = try file.read(path, as: Float.self).values
            guard scale.isFinite, scale > 0, weights.allSatisfy({ $0.isFinite && $0 > 0 }) else {
                throw bad("\(path): scales must be positive and finite")
            }
            units[name] = UnitQuantization(inputType: type, inputScale: scale, weightScales: weights)
        }
        return ModelQuantization(
            method: method, calibrationSet: try text("calibration_set"), split: try text("split"),
            caseCount: Int(try number("cases")), sliceCount: Int(try number("slices")),
            units: units, floatUnits: floatUnits)
    }
}

// MARK: - The model's units

/// A backbone block as int8 inference sees it: its units in order, the 1×1 downsample on its identity path,
/// whether the identity is added to the last unit's output, and the quantisation its input gets at entry.
protocol QuantizableBlock: AnyObject {
    var units: [ConvUnit] { get }
    var downsample: ConvUnit? { get }
    var addsIdentity: Bool { get }
    var entryQuantization: UnitQuantization? { get set }
}

extension ResidualBlock: QuantizableBlock {
    var addsIdentity: Bool { true }
}

extension InvertedResidual: QuantizableBlock {
    var downsample: ConvUnit? { nil }
    var addsIdentity: Bool { usesResidual }
}

extension DeepLabV3 {
    /// Every convolution unit: the backbone's, then the head's (ASPP branches, pooling, projection, the 3×3, for
    /// DeepLabV3+ the low-level path, the classifier), then the auxiliary head's.
    var convUnits: [ConvUnit] { backbone.convUnits + head.units + auxiliaryHeadUnits }

    private var auxiliaryHeadUnits: [ConvUnit] { auxiliaryHead.map { [$0.body, $0.classifier] } ?? [] }

    /// The units calibration leaves in float32: the classifiers (their logits decide the labels, and they
    /// are a small share of the work) and ASPP's image-pooling branch (a 1 × 1 input).
    var floatUnitNames: Set<String> {
        Set([head.classifier.name, head.aspp.pooling.name] + auxiliaryHeadUnits.suffix(1).map(\.name))
    }

    /// The multiply-adds of the convolutions of every eval-mode forward since the last
    /// `resetMultiplyAddCount()`, counted as the direct algorithm does them (padding taps and Winograd's savings
    /// included): the work figure achieved TFLOP/s and TOPS are computed from.
    public var multiplyAddCount: Int { convUnits.reduce(0) { $0 + $1.multiplyAdds } }

    /// Starts `multiplyAddCount` again from zero (and the layer and operation profiles).
    public func resetMultiplyAddCount() {
        for unit in convUnits { unit.resetMultiplyAdds() }
        operations.reset()
    }

    /// Each convolution unit's profile (`LayerProfile`) over the eval-mode forwards since the last
    /// `resetMultiplyAddCount()` that ran inside `profilingLayers`, in forward order.
    public var layerProfiles: [LayerProfile] { convUnits.compactMap(\.profile) }

    /// The same for the forward's operations other than convolutions (resizes, DeepLabV3+'s join, ASPP's image
    /// pooling and concatenation; no multiply-adds), in the order they first ran.
    public var operationProfiles: [LayerProfile] { operations.profiles }

    /// `body` with every eval-mode forward it runs (on this thread or task) profiled per unit when `on`.
    public static func profilingLayers<T>(_ on: Bool = true, _ body: () throws -> T) rethrows -> T {
        try LayerProfiling.$enabled.withValue(on) { try body() }
    }

    /// The arithmetic `forward` runs in: int8 once a quantisation is applied, bf16 once `useBf16(_:)` is,
    /// else fp32.
    public var precision: Precision { quantization != nil ? .int8 : bf16 != nil ? .bf16 : .fp32 }

    /// Sets every unit's int8 parameters (nil: back to float32).
    ///
    /// - Throws: `DeepLabError.invalidConfiguration` when a quantised unit is not in
    ///   the model or a unit's scale count differs from its output channels.
    public func apply(_ quantization: ModelQuantization?) throws {
        for unit in convUnits {
            unit.quantizedOutput = nil
            unit.quantizedResidual = nil
        }
        let (blocks, featureOutputs) = backbone.quantizableBlocks
        for block in blocks { block.entryQuantization = nil }
        head.aspp.entryQuantization = nil
        guard let quantization else {
            for unit in convUnits { unit.quantization = nil }
            self.quantization = nil
            return
        }
        let units = Dictionary(convUnits.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for name in quantization.units.keys where units[name] == nil {
            throw DeepLabError.invalidConfiguration("the quantisation names unit '\(name)', which the model lacks")
        }
        for (name, unit) in units {
            let q = quantization.units[name]
            if let q, q.weightScales.count != unit.conv.outputChannels {
                throw DeepLabError.invalidConfiguration(
                    "unit '\(name)': \(q.weightScales.count) weight scales for "
                        + "\(unit.conv.outputChannels) output channels")
            }
            unit.quantization = q
        }
        // Inside a chain (a block, a separable convolution), a quantised unit writes its output quantised for the
        // next one: u8 after an activation, s8 whatever it ends with (a depthwise convolution's linear output).
        for chain in backbone.unitChains + head.unitChains {
            for (unit, next) in zip(chain, chain.dropFirst()) where unit.quantization != nil {
                guard let q = next.quantization, q.inputType == .s8 || unit.activation != .none else { continue }
                unit.quantizedOutput = q
            }
        }
        // Between blocks: each block's input is quantised once at its entry (where its first unit and its
        // downsample take the same quantisation); its last unit adds that quantised identity and writes its
        // output quantised for the next block, when the next block alone reads it and takes it in the type the
        // identity has (one scaled `sum` post-op adds integers of the destination's type).
        func sameInput(_ a: UnitQuantization?, _ b: UnitQuantization?) -> Bool {
            a?.inputType == b?.inputType && a?.inputScale == b?.inputScale
        }
        for block in blocks {
            guard let entry = block.units.first?.quantization else { continue }
            if let downsample = block.downsample, !sameInput(downsample.quantization, entry) { continue }
            block.entryQuantization = entry
            if block.addsIdentity, block.downsample == nil { block.units.last?.quantizedResidual = entry }
        }
        if let stem = backbone.unitFeedingFirstBlock, stem.quantization != nil, stem.activation != .none,
            let entry = blocks.first?.entryQuantization, entry.inputType == .u8
        {
            stem.quantizedOutput = entry
        }
        for (index, (block, next)) in zip(blocks, blocks.dropFirst()).enumerated()
        where !featureOutputs.contains(index) {
            guard let last = block.units.last, last.quantization != nil, let entry = next.entryQuantization
            else { continue }
            if block.addsIdentity && last.quantizedResidual?.inputType != entry.inputType { continue }
            last.quantizedOutput = entry
        }
        // ASPP: one quantised input for the branches (they read the same tensor, so calibration gave them the
        // same scale), their outputs u8 at the projection's input scale (the concatenation is its input), and
        // the projection's output quantised for the 3×3 that alone reads it.
        let aspp = head.aspp
        let (firsts, lasts) = (aspp.branches.compactMap(\.first), aspp.branches.compactMap(\.last))
        if let entry = firsts.first?.quantization, firsts.allSatisfy({ sameInput($0.quantization, entry) }) {
            aspp.entryQuantization = entry
            // The unit computing the feature writes it in that quantisation (the image-pooling branch then
            // averages the quantised values, `Int8Operations.globalAveragePool`).
            if let last = backbone.unitFeedingHead, last.quantization != nil,
                entry.inputType == .s8 || last.activation != .none
            {
                last.quantizedOutput = entry
            }
        }
        if let projection = aspp.projection.quantization, lasts.allSatisfy({ $0.quantization != nil }) {
            for branch in lasts { branch.quantizedOutput = projection }
        }
        if aspp.projection.quantization != nil, let refine = head.refine.first?.quantization {
            aspp.projection.quantizedOutput = refine
        }
        self.quantization = quantization
    }
}
