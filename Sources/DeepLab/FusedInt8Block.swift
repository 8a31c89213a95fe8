import CFusedBlocks
import Foundation

/// An int8 `InvertedResidual` in one pass in eval mode, by `CFusedBlocks` (`cfused_int8`): what its three quantised
/// units compute one after the other on oneDNN (`Int8Convolution`), u8 × s8 products summed exactly in s32 and each
/// unit's output rounded to the next one's u8, but one output row at a time, with the expanded rows kept in the cache
/// instead of going to memory (and without a oneDNN primitive, and its threads' barrier, per unit). The 1 × 1
/// convolutions run on `vpdpbusd`, so it takes AVX-512 with VNNI (where the units quantise u8 inputs at their full 8
/// bits, `Int8Convolution.effectiveInputScale`); the depthwise sums are exact in float32. The same integers as the
/// units (each epilogue is oneDNN's, in float32, in its order; the sums are exact): `FusedInt8BlockTests`.
///
/// Off unless `variable` is `1`: measured slower than the units on the one VNNI CPU it ran on (an Intel Xeon with
/// AVX-512 VNNI, no AMX; the bundled model's int8 blocks, 233 × 197, 2 threads, `segment --timings`, 2 alternated
/// runs of 40 forwards: 369 and 364 ms fused against 314 and 336 ms; blocks 3 and 5–17 at par, 1, 2 and 4 up to
/// 1.5 × slower). An int8 block moves a quarter of a float32 block's bytes between its units, so there is less
/// traffic to save, and this pass keeps the expanded rows and the depthwise sums in float32 and converts them, where
/// oneDNN's units stay in bytes (Benchmarks/README.md).
final class FusedInt8Block {
    private var parameters: Parameters?

    /// Int8 fusion where this process's oneDNN and this CPU both run AVX-512 VNNI; nil elsewhere.
    init?() {
        guard FusedInvertedResidual.effectiveISA == cfused_avx512, cfused_int8_supported() != 0,
            Int8Operations.hasVNNI
        else { return nil }
    }

    /// The environment variable that fuses every int8 block that fits when `1` (for measuring; off by default).
    public static let variable = "SLICELAB_FUSED_INT8"

    /// Whether int8 blocks of this process fuse (`variable`).
    static let enabledInThisProcess = FusedKernels.measuringSwitch(variable, else: false)

    /// Whether `block` runs as one int8 pass: every unit quantised (no calibration observing, no bf16), the input
    /// quantised at the block's entry, each unit but the last writing the next one's u8 input, the float32 fusion's
    /// geometry (`FusedKernels.fitsChain`), an identity in the entry's type.
    static func fits(_ block: InvertedResidual) -> Bool {
        let units = block.units
        guard let entry = block.entryQuantization, (2...3).contains(units.count),
            units.allSatisfy({ $0.quantization != nil && $0.inputObserver == nil && $0.bf16 == nil }),
            units[0].quantization == entry,
            zip(units, units.dropFirst()).allSatisfy({ unit, next in
                unit.quantizedOutput == next.quantization && next.quantization?.inputType == .u8
            }),
            !block.usesResidual || units[units.count - 1].quantizedResidual == entry
        else { return false }
        return FusedKernels.fitsChain(units, residual: block.usesResidual)
    }

    /// `block` on `x` (its entry's quantisation, any layout), into a channels-last tensor of the last unit's output
    /// quantisation (f32 without one); counted and profiled as its units would be, under the block's name.
    func callAsFunction(_ block: InvertedResidual, _ x: Tensor) throws -> Tensor {
        try FusedKernels.counted(block.units, inputShape: x.shape, x, name: block.name, strategy: "fused-int8") {
            let parameters = try self.parameters(for: block)
            guard Int8Operations.holds(x, parameters.inputType) else {
                throw DeepLabError.invalidInput(
                    "\(block.name): the fused int8 block's input is not \(parameters.inputType)")
            }
            return try FusedKernels.run(
                FusedInvertedResidual.description(block, inputShape: x.shape), x, weights: parameters.floats,
                isa: cfused_avx512, name: "fused int8 block \(block.name)",
                int8: (parameters.description, parameters.inputType, parameters.outputType))
        }
    }

    /// One block's s8 weights, requantisation and packed taps, made once per parameter version and quantisation; the
    /// arrays in buffers of their own so `description` can point at them.
    final class Parameters {
        /// What they were made from (`Parameters.source(of:)`).
        let source: Source
        let inputType: QuantizedType
        let outputType: QuantizedType?
        /// The depthwise taps (s8 values as floats) and zeros for their bias, in the float32 kernels' places (see
        /// `FusedKernels.run`): no expansion or projection weights there.
        let floats: FusedKernels.Weights
        private let buffers: [UnsafeMutableRawBufferPointer]
        /// The kernels' description, its pointers into `buffers`; `input` and `output` set by `FusedKernels.run`.
        let description: cfused_int8

        init(_ block: InvertedResidual) throws {
            let units = block.units
            source = Self.source(of: block)
            guard let entry = block.entryQuantization else {
                throw DeepLabError.invalidConfiguration("\(block.name): an int8 block without its entry quantisation")
            }
            inputType = entry.inputType
            outputType = units[units.count - 1].quantizedOutput?.inputType
            var buffers: [UnsafeMutableRawBufferPointer] = []
            func keep<T>(_ array: [T]) -> UnsafePointer<T> {
                let buffer = UnsafeMutableRawBufferPointer.allocate(
                    byteCount: max(1, array.count * MemoryLayout<T>.stride), alignment: 64)
                array.withUnsafeBytes { buffer.copyMemory(from: $0) }
                buffers.append(buffer)
                return UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: T.self))
            }
            // A unit's requantisation (`Int8Convolution`'s output scales, pre-scaled bias and clip, the output type's
            // range) and its s8 weights, [O][K] row-major.
            func requant(_ unit: ConvUnit) -> (cfused_requant, weights: [Int8]) {
                let q = unit.quantization!
                let next = unit.quantizedOutput
                let (inputScale, outputScale) = (q.inputScale, next?.inputScale ?? 1)
                let (w, b) = unit.foldedPlainWeights()
                let o = unit.conv.outputChannels
                let perChannel = w.count / o
                let weights = w.indices.map { i in
                    Int8(max(-128, min(127, (w[i] * q.weightScales[i / perChannel]).rounded(.toNearestOrEven))))
                }
                let zeros = [Float](repeating: 0, count: padded(o) - o)
                var r = cfused_requant()
                r.bias = keep(Int8Convolution.scaledBias(b, q) + zeros)
                r.scales = keep(q.weightScales.map { outputScale / (inputScale * $0) } + zeros)
                var (low, high) =
                    switch unit.activation {
                    case .relu6: (0 * outputScale, 6 * outputScale)
                    case .relu: (Float(0), Float.infinity)
                    case .none: (-Float.infinity, Float.infinity)
                    }
                switch next?.inputType {
                case .u8?: (low, high) = (max(low, 0), min(high, 255))
                case .s8?: (low, high) = (max(low, -128), min(high, 127))
                case nil: break
                }
                (r.low, r.high) = (low, high)
                return (r, weights)
            }
            // A 1 × 1 unit's weights transposed to [K][O] and packed; the compensation of an s8 input.
            func pointwise(_ unit: ConvUnit, signedInput: Bool) -> (cfused_requant, UnsafePointer<Int8>) {
                var (r, w) = requant(unit)
                let (o, k) = (unit.conv.outputChannels, unit.conv.inputChannels)
                var transposed = [Int8](repeating: 0, count: o * k)
                for a in 0..<o { for c in 0..<k { transposed[c * o + a] = w[a * k + c] } }
                var packed = [Int8](repeating: 0, count: cfused_packed_s8_count(Int32(k), Int32(o)))
                cfused_pack_s8(transposed, Int32(k), Int32(o), &packed)
                if signedInput {
                    let sums = (0..<o).map { a in Int32(128 * (0..<k).reduce(0) { $0 + Int(w[a * k + $1]) }) }
                    r.compensation = keep(sums + [Int32](repeating: 0, count: padded(o) - o))
                }
                return (r, keep(packed))
            }
            let depthwise = units[units.count - 2]
            let (dwRequant, dwWeights) = requant(depthwise)
            let channels = depthwise.conv.inputChannels
            var taps = [Float](repeating: 0, count: 9 * padded(channels))
            for c in 0..<channels {
                for t in 0..<9 { taps[t * padded(channels) + c] = Float(dwWeights[c * 9 + t]) }
            }
            floats = FusedKernels.Weights(
                version: source.version, isa: cfused_avx512,
                arrays: [[], [], taps, [Float](repeating: 0, count: padded(channels)), [], []])
            var description = cfused_int8()
            description.input_type = Int32((inputType == .u8 ? cfused_u8 : cfused_s8).rawValue)
            description.output_type = Int32(
                (outputType == nil ? cfused_f32 : outputType == .u8 ? cfused_u8 : cfused_s8).rawValue)
            if units.count == 3 {
                (description.expand, description.expand_weights) = pointwise(units[0], signedInput: inputType == .s8)
            }
            description.depthwise = dwRequant
            (description.project, description.project_weights) = pointwise(units[units.count - 1], signedInput: false)
            // The identity's integers: × output scale / identity scale into a quantised output (oneDNN's scaled
            // `sum`), dequantised (÷ identity scale) into an f32 one.
            let outputScale = units[units.count - 1].quantizedOutput?.inputScale
            description.residual_scale = outputScale.map { $0 / entry.inputScale } ?? 1 / entry.inputScale
            self.description = description
            self.buffers = buffers
        }

        deinit { buffers.forEach { $0.deallocate() } }

        /// The units' parameter versions and quantisations (their own and their outputs').
        struct Source: Equatable {
            let version: Int
            let quantizations: [UnitQuantization?]
        }

        static func source(of block: InvertedResidual) -> Source {
            Source(
                version: block.units.reduce(0) { $0 &+ $1.parameterVersion },
                quantizations: block.units.map(\.quantization) + block.units.map(\.quantizedOutput))
        }
    }

    /// `block`'s parameters, made again when its weights or quantisation changed.
    private func parameters(for block: InvertedResidual) throws -> Parameters {
        if let parameters, parameters.source == Parameters.source(of: block) { return parameters }
        let made = try Parameters(block)
        parameters = made
        return made
    }
}

/// `n` rounded up to whole vectors of 16 (the int8 kernels' channels).
private func padded(_ n: Int) -> Int { (n + 15) / 16 * 16 }
