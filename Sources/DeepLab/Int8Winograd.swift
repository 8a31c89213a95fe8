import CInt8Winograd

/// `Int8Convolution`'s exact Winograd F(4×4, 3×3) or F(2×2, 3×3) for u8-input 3×3 convolutions (stride 1,
/// padding equal to the dilation) on AVX2, in `CInt8Winograd`: the Winograd-domain values are 16-bit integers and
/// the sums 32-bit, so the integer accumulators equal a direct convolution's and the f32 epilogue is oneDNN's; the
/// output is the same to the last bit wherever oneDNN's own kernel is exact (its `vpmaddubsw` saturates a pair of
/// products at 32767, which the 7-bit inputs of `Int8Convolution.effectiveInputScale` rule out). 4-fold (F(4×4))
/// or 2.25-fold fewer products at half the per-instruction width (16-bit `vpmaddwd` against u8 × s8
/// `vpmaddubsw`).
///
/// The tile size is chosen per call from a bound on the sums, the largest over output channels of Σ|w| per input
/// channel times that channel's largest input value: F(4×4) below 2²⁵, F(2×2) below 2²⁹ (at 128 channels and
/// up), else oneDNN's direct convolution. Every choice gives the same output, so it never changes a result, only
/// the time.
final class Int8Winograd {
    /// What a unit's computations share, made once per parameter version and quantisation.
    private struct Prepared {
        let version: Int
        let quantization: UnitQuantization
        /// The kernel quantised to s8, [O, I, 3, 3].
        let quantized: Tensor
        /// Σ|w| over the taps per (output, input channel).
        let sums: [Int32]
        /// The bound on the sums for any u8 input (every channel's largest input 255).
        let anyInputBound: Int64
        /// The bias in the accumulator's units.
        let bias: [Float]
        /// The Winograd-domain weights by tile size, made when first used.
        var weights: [Int32: [Int16]] = [:]
    }
    private var prepared: Prepared?

    func releaseInferenceWeights() { prepared = nil }

    /// The tile size of the last computation (4 or 2), or 0 when it was left to the direct convolution.
    private(set) var lastTile: Int32?

    /// Whether this CPU runs the AVX2 kernels at all (the strategy table picks them on AVX2 only).
    static let supported = cint8_winograd_supported() != 0

    /// Whether `unit` has the shape this path computes: u8 input, 3×3, stride 1, padding equal to the dilation,
    /// not grouped, channels in whole blocks of 16 and at least 64 wide.
    static func fits(_ unit: ConvUnit, _ q: UnitQuantization) -> Bool {
        let conv = unit.conv
        let w = conv.window
        return supported && q.inputType == .u8 && conv.groups == 1 && w.kernel == 3 && w.stride == 1
            && w.padding == w.dilation && conv.inputChannels % 16 == 0 && conv.outputChannels % 16 == 0
            && min(conv.inputChannels, conv.outputChannels) >= 64
    }

    /// The tile size whose arithmetic holds sums up to `bound` exactly (see CInt8Winograd.h) and that is faster
    /// than oneDNN's direct kernel at `width` (the smaller channel count), or nil. F(2×2) saves too little below
    /// 128 channels: on one core a 64 → 64 convolution ran at 84 G direct-equivalent multiply-adds a second
    /// against about 95 for oneDNN, and the bundled mni-brain model's 1280 → 64 ASPP centre took 52 ms against
    /// 29.6 ms for oneDNN on two; F(4×4) ran that 64 → 64 convolution at 150–160 G.
    static func tile(forSumsUpTo bound: Int64, width: Int) -> Int32? {
        bound < 1 << 25 ? 4 : bound < 1 << 29 && width >= 128 ? 2 : nil
    }

    /// Computes the outputs `rows` × `columns` (all of them by default) of `unit` on `input` (u8, channels last)
    /// into `output` (channels last, of the input's extent, `destination`'s type or f32), with per-output-channel
    /// `scales` and `activation` (already in the destination's units). Returns false, leaving `output`
    /// untouched, when the sums could reach beyond the exact range.
    func compute(
        _ unit: ConvUnit, _ q: UnitQuantization, input: Tensor, into output: Tensor, scales: [Float],
        activation: PrimitiveAttributes.PostOp?, destination: QuantizedType?,
        rows: Range<Int>? = nil, columns: Range<Int>? = nil
    ) throws -> Bool {
        let p = try prepare(unit, q)
        let s = input.shape
        // The input's channel maxima are read only when the weights alone do not already allow F(4×4).
        let bound =
            p.anyInputBound < 1 << 25
            ? p.anyInputBound
            : input.withStorage { source in
                var largest = [UInt8](repeating: 0, count: s[1])
                cint8_winograd_channel_max(
                    UnsafeRawPointer(source.baseAddress!).assumingMemoryBound(to: UInt8.self),
                    Int64(s[0] * s[2] * s[3]), Int32(s[1]), &largest)
                return cint8_winograd_sum_bound(p.sums, largest, Int32(unit.conv.outputChannels), Int32(s[1]))
            }
        guard let tile = Self.tile(forSumsUpTo: bound, width: min(s[1], unit.conv.outputChannels)) else {
            lastTile = 0
            return false
        }
        let weights = transformedWeights(tile)
        let rows = rows ?? 0..<s[2]
        let columns = columns ?? 0..<s[3]
        var kind = cint8_winograd_identity
        var low: Float = 0
        var high: Float = 0
        switch activation {
        case .relu?: kind = cint8_winograd_relu
        case .clip(let l, let h)?: (kind, low, high) = (cint8_winograd_clip, l, h)
        case nil: break
        case .sum?, .scaledSum?: preconditionFailure("the int8 Winograd path takes no residual")
        }
        let type = destination.map { $0 == .u8 ? cint8_winograd_u8 : cint8_winograd_s8 } ?? cint8_winograd_f32
        try input.withStorage { source in
            try output.withStorage { target in
                try weights.withUnsafeBufferPointer { w in
                    try p.bias.withUnsafeBufferPointer { b in
                        try scales.withUnsafeBufferPointer { sc in
                            var conv = cint8_winograd_convolution(
                                batch: Int32(s[0]), height: Int32(s[2]), width: Int32(s[3]),
                                channels: Int32(s[1]), outputs: Int32(unit.conv.outputChannels),
                                dilation: Int32(unit.conv.window.dilation), tile: tile,
                                row_begin: Int32(rows.lowerBound), row_end: Int32(rows.upperBound),
                                column_begin: Int32(columns.lowerBound), column_end: Int32(columns.upperBound),
                                input: UnsafeRawPointer(source.baseAddress!).assumingMemoryBound(to: UInt8.self),
                                weights: w.baseAddress, bias: b.baseAddress, scales: sc.baseAddress,
                                activation: kind, low: low, high: high, destination_type: type,
                                output: UnsafeMutableRawPointer(target.baseAddress!))
                            try Self.run(&conv)
                        }
                    }
                }
            }
        }
        lastTile = tile
        return true
    }

    /// Runs the chunks of `conv` on the compute threads, each with its own part of one scratch allocation.
    private static func run(_ conv: inout cint8_winograd_convolution) throws {
        let chunks = Int(cint8_winograd_chunks(&conv))
        let bytes = (cint8_winograd_scratch_bytes(&conv) + 63) / 64 * 64
        let threads = computeThreads()
        guard let scratch = TensorMemory.shared.allocate(bytes * threads) else {
            throw DeepLabError.outOfMemory(bytes: bytes * threads)
        }
        defer { TensorMemory.shared.release(scratch, bytes: bytes * threads) }
        withUnsafePointer(to: conv) { conv in
            parallelWorkers { worker, workers in
                precondition(workers <= threads, "more compute threads than scratch parts")
                let first = chunks * worker / workers
                let end = chunks * (worker + 1) / workers
                cint8_winograd_run(conv, Int64(first), Int64(end), scratch + worker * bytes)
            }
        }
    }

    /// The kernel quantised to s8 as the direct path quantises it (oneDNN's reorder), its Σ|w| per channel pair
    /// and the bias in the accumulator's units; made once per parameter version and quantisation.
    private func prepare(_ unit: ConvUnit, _ q: UnitQuantization) throws -> Prepared {
        let version = unit.parameterVersion
        if let p = prepared, p.version == version, p.quantization == q { return p }
        let (w, b) = unit.foldedPlainWeights()
        let conv = unit.conv
        let quantized = try Int8Operations.quantizeWeights(
            try Tensor(plain: conv.weightDims, values: w),
            into: Int8Operations.plainWeights(conv.weightDims),
            scales: q.weightScales)
        var sums = [Int32](repeating: 0, count: conv.outputChannels * conv.inputChannels)
        quantized.withStorage { s in
            sums.withUnsafeMutableBufferPointer { sums in
                cint8_winograd_weight_sums(
                    UnsafeRawPointer(s.baseAddress!).assumingMemoryBound(to: Int8.self),
                    Int32(conv.outputChannels), Int32(conv.inputChannels), sums.baseAddress)
            }
        }
        let anyInput = [UInt8](repeating: UInt8.max, count: conv.inputChannels)
        let p = Prepared(
            version: version, quantization: q, quantized: quantized, sums: sums,
            anyInputBound: cint8_winograd_sum_bound(
                sums, anyInput, Int32(conv.outputChannels),
                Int32(conv.inputChannels)),
            bias: Int8Convolution.scaledBias(b, q))
        prepared = p
        return p
    }

    /// The prepared kernel in the Winograd domain of `tile`, made on first use (after `prepare`).
    private func transformedWeights(_ tile: Int32) -> [Int16] {
        guard var p = prepared else { preconditionFailure("int8 Winograd weights before preparation") }
        if let weights = p.weights[tile] { return weights }
        let outputs = Int32(p.quantized.shape[0])
        let channels = Int32(p.quantized.shape[1])
        var transformed = [Int16](repeating: 0, count: cint8_winograd_weights_count(outputs, channels, tile))
        p.quantized.withStorage { s in
            transformed.withUnsafeMutableBufferPointer { t in
                cint8_winograd_weights(
                    UnsafeRawPointer(s.baseAddress!).assumingMemoryBound(to: Int8.self),
                    outputs, channels, tile, t.baseAddress)
            }
        }
        p.weights[tile] = transformed
        prepared = p
        return transformed
    }
}
