import CInt8Winograd

/// `Int8Convolution`'s exact Winograd F(2×2, 3×3) for u8-input 3×3 convolutions (stride 1, padding equal to the
/// dilation) on AVX2, in `CInt8Winograd`: the Winograd-domain values are 16-bit integers and the sums 32-bit, so
/// the integer accumulators equal a direct convolution's and the f32 epilogue is oneDNN's; the output is the
/// same to the last bit wherever oneDNN's own kernel is exact (its `vpmaddubsw` saturates a pair of products at
/// 32767, which the 7-bit inputs of `Int8Convolution.effectiveInputScale` rule out). 2.25-fold fewer products
/// at half the per-instruction width (16-bit `vpmaddwd` against u8 × s8 `vpmaddubsw`): on the AMD EPYC (2
/// threads) ResNet-50's 512 → 512 convolution on 64 × 64 at dilation 4 took 36 ms against oneDNN's 48–54 ms.
final class Int8Winograd {
    /// The Winograd-domain weights and pre-scaled bias, with the parameter version and quantisation they came
    /// from; `weights` is nil when the kernel's Σ|w| allows an accumulator beyond the exact range.
    private var prepared: (version: Int, quantization: UnitQuantization, weights: [Int16]?, bias: [Float])?

    func releaseInferenceWeights() { prepared = nil }

    /// Whether the prepared weights keep the accumulators exact (nil before a unit was prepared).
    var isExact: Bool? { prepared.map { $0.weights != nil } }

    /// Whether this CPU runs the AVX2 kernels at all (the strategy table picks them on AVX2 only).
    static let supported = cint8_winograd_supported() != 0

    /// Whether `unit` has the shape this path computes: u8 input, 3×3, stride 1, padding equal to the dilation,
    /// not grouped, channels in whole blocks of 16 and at least 128 wide (64-channel ones ran slower than
    /// oneDNN's direct kernel: 84 against ~95 G multiply-adds a second on a core).
    static func fits(_ unit: ConvUnit, _ q: UnitQuantization) -> Bool {
        let conv = unit.conv, w = conv.window
        return supported && q.inputType == .u8 && conv.groups == 1 && w.kernel == 3 && w.stride == 1
            && w.padding == w.dilation && conv.inputChannels % 16 == 0 && conv.outputChannels % 16 == 0
            && min(conv.inputChannels, conv.outputChannels) >= 128
    }

    /// The largest |accumulator| whose fourfold the 32-bit arithmetic still holds exactly (see CInt8Winograd.h).
    static let exactLimit: Int64 = 1 << 29

    /// Computes the outputs `rows` × `columns` (all of them by default) of `unit` on `input` (u8, channels last)
    /// into `output` (channels last, of the input's extent, `destination`'s type or f32), with per-output-channel
    /// `scales` and `activation` (already in the destination's units). Returns false, leaving `output`
    /// untouched, when the weights could reach beyond the exact range.
    func compute(_ unit: ConvUnit, _ q: UnitQuantization, input: Tensor, into output: Tensor, scales: [Float],
                 activation: PrimitiveAttributes.PostOp?, destination: QuantizedType?,
                 rows: Range<Int>? = nil, columns: Range<Int>? = nil) throws -> Bool {
        let (weights, bias) = try preparedWeights(unit, q)
        guard let weights else { return false }
        let s = input.shape
        let rows = rows ?? 0..<s[2], columns = columns ?? 0..<s[3]
        var kind = cint8_winograd_identity, low: Float = 0, high: Float = 0
        switch activation {
        case .relu?: kind = cint8_winograd_relu
        case let .clip(l, h)?: (kind, low, high) = (cint8_winograd_clip, l, h)
        case nil: break
        case .sum?, .scaledSum?: preconditionFailure("the int8 Winograd path takes no residual")
        }
        let type = destination.map { $0 == .u8 ? cint8_winograd_u8 : cint8_winograd_s8 } ?? cint8_winograd_f32
        try input.withStorage { source in
            try output.withStorage { target in
                try weights.withUnsafeBufferPointer { w in
                    try bias.withUnsafeBufferPointer { b in
                        try scales.withUnsafeBufferPointer { sc in
                            var conv = cint8_winograd_convolution(
                                batch: Int32(s[0]), height: Int32(s[2]), width: Int32(s[3]),
                                channels: Int32(s[1]), outputs: Int32(unit.conv.outputChannels),
                                dilation: Int32(unit.conv.window.dilation),
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
                let first = chunks * worker / workers, end = chunks * (worker + 1) / workers
                cint8_winograd_run(conv, Int64(first), Int64(end), scratch + worker * bytes)
            }
        }
    }

    /// The kernel quantised to s8 as the direct path quantises it (oneDNN's reorder), moved into the Winograd
    /// domain, and the bias in the accumulator's units; made once per parameter version and quantisation.
    private func preparedWeights(_ unit: ConvUnit,
                                 _ q: UnitQuantization) throws -> (weights: [Int16]?, bias: [Float]) {
        let version = unit.parameterVersion
        if let p = prepared, p.version == version, p.quantization == q { return (p.weights, p.bias) }
        let (w, b) = unit.foldedPlainWeights()
        let conv = unit.conv
        let quantized = try Int8Operations.quantizeWeights(try Tensor(plain: conv.weightDims, values: w),
                                                           into: Int8Operations.plainWeights(conv.weightDims),
                                                           scales: q.weightScales)
        var transformed = [Int16](repeating: 0, count: cint8_winograd_weights_count(Int32(conv.outputChannels),
                                                                                    Int32(conv.inputChannels)))
        let largest = quantized.withStorage { s in
            transformed.withUnsafeMutableBufferPointer { t in
                cint8_winograd_weights(UnsafeRawPointer(s.baseAddress!).assumingMemoryBound(to: Int8.self),
                                       Int32(conv.outputChannels), Int32(conv.inputChannels), t.baseAddress)
            }
        }
        let exact = largest * Int64(QuantizedType.u8.levels) < Self.exactLimit
        let bias = Int8Convolution.scaledBias(b, q)
        prepared = (version, q, exact ? transformed : nil, bias)
        return (prepared!.weights, bias)
    }
}
