import Foundation
import SliceLabSupport

/// A VOI window (PS3.3 C.11.2.1.2): centre and width in modality units and the function that maps them.
public struct VOIWindow: Sendable, Equatable, Codable {
    public enum Function: String, Sendable, Codable {
        case linear = "LINEAR"
        case linearExact = "LINEAR_EXACT"
        case sigmoid = "SIGMOID"
    }

    public var center: Double
    public var width: Double
    public var function: Function

    public init(center: Double, width: Double, function: Function = .linear) {
        self.center = center
        self.width = width
        self.function = function
    }

    /// A window spanning the 1st to the 99th percentile of `values` (LINEAR_EXACT), for images without one.
    public static func automatic(_ values: [Float], lowerPercentile: Double = 1, upperPercentile: Double = 99)
        -> VOIWindow
    {
        let finite = values.filter { $0.isFinite }.sorted()
        guard let first = finite.first, let last = finite.last else { return VOIWindow(center: 0, width: 1) }
        var low = Percentile.ofSorted(finite, lowerPercentile)
        var high = Percentile.ofSorted(finite, upperPercentile)
        if high <= low { (low, high) = (Double(first), Double(last)) }
        let width = max(high - low, 1e-6)
        return VOIWindow(center: (low + high) / 2, width: width, function: .linearExact)
    }

    /// Maps a modality value to [outputMinimum, outputMaximum] with the window's function.
    public func apply(_ x: Double, outputMinimum: Double, outputMaximum: Double) -> Double {
        let range = outputMaximum - outputMinimum
        switch function {
        case .linear:
            let w = max(width, 1)
            if x <= center - 0.5 - (w - 1) / 2 { return outputMinimum }
            if x > center - 0.5 + (w - 1) / 2 { return outputMaximum }
            return w == 1 ? outputMaximum : ((x - (center - 0.5)) / (w - 1) + 0.5) * range + outputMinimum
        case .linearExact:
            let w = max(width, .leastNormalMagnitude)
            if x <= center - w / 2 { return outputMinimum }
            if x > center + w / 2 { return outputMaximum }
            return ((x - center) / w + 0.5) * range + outputMinimum
        case .sigmoid:
            return range / (1 + exp(-4 * (x - center) / max(width, .leastNormalMagnitude))) + outputMinimum
        }
    }
}

/// The display pipeline after the modality LUT: a VOI window or VOI LUT, then MONOCHROME1 inversion
/// (PS3.3 C.11.2, C.7.6.3.1.2).
public enum DisplayPipeline {
    /// Grey levels for display, row-major, in 0...(2^bits − 1).
    ///
    /// - Parameters:
    ///   - modality: modality values of one frame.
    ///   - window: the VOI window; ignored when `voiLUT` is given.
    ///   - voiLUT: a VOI LUT (from the VOI LUT Sequence) applied to the modality values instead of a window.
    ///   - invert: MONOCHROME1: the minimum is white, so the output is inverted after the VOI.
    ///   - bits: 8 or 16.
    public static func greyLevels(
        _ modality: [Float], window: VOIWindow, voiLUT: VOILookupTable? = nil,
        invert: Bool, bits: Int
    ) -> [UInt16] {
        let maximum = Double((1 << bits) - 1)
        return modality.map { value -> UInt16 in
            var y: Double
            if let voiLUT {
                let entry = Double(voiLUT.table.apply(Int(Double(value).rounded(.down))))
                y = entry / Double((1 << voiLUT.table.bitsPerEntry) - 1) * maximum
            } else {
                y = window.apply(Double(value), outputMinimum: 0, outputMaximum: maximum)
            }
            if invert { y = maximum - y }
            return UInt16(min(max(y.rounded(), 0), maximum))
        }
    }
}

/// A VOI LUT from the VOI LUT Sequence (PS3.3 C.11.2.1.1).
public struct VOILookupTable: Sendable {
    let table: LookupTable
}

extension DICOMFile {
    /// The file's VOI window for a frame: the Frame VOI LUT functional group, else Window Center/Width (first
    /// value) with VOI LUT Function; nil when the file has none.
    public func window(frame: Int = 0) -> VOIWindow? {
        func read(_ item: DICOMItem) -> VOIWindow? {
            guard let center = item.double(.windowCenter), let width = item.double(.windowWidth), width > 0
            else { return nil }
            let function = item.string(.voiLUTFunction).flatMap { VOIWindow.Function(rawValue: $0.uppercased()) }
            return VOIWindow(center: center, width: width, function: function ?? .linear)
        }
        return functionalGroupValue(frame: frame, sequence: .frameVOILUTSequence, read) ?? read(dataset)
    }

    /// The first VOI LUT of the VOI LUT Sequence, if any.
    public func voiLookupTable() throws -> VOILookupTable? {
        guard let item = dataset.item(.voiLUTSequence) else { return nil }
        return VOILookupTable(table: try LookupTable(item: item, file: path))
    }

    /// The display image of a grayscale frame: modality values → window (the given one, the file's, or an
    /// automatic one) or VOI LUT → MONOCHROME1 inversion; grey levels of `bits` bits.
    public func displayFrame(_ index: Int, window: VOIWindow? = nil, bits: Int = 8) throws -> [UInt16] {
        let modality = try modalityFrame(index)
        let lut = window == nil && self.window(frame: index) == nil ? try voiLookupTable() : nil
        let chosen = window ?? self.window(frame: index) ?? VOIWindow.automatic(modality)
        return DisplayPipeline.greyLevels(
            modality, window: chosen, voiLUT: lut,
            invert: photometricInterpretation == "MONOCHROME1", bits: bits)
    }
}
