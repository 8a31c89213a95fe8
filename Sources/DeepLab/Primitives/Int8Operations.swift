import COneDNN
import SliceLabSupport

// The raw oneDNN calls of the int8 inference path: quantising reorders (f32 → u8/s8 with a scale), per-channel
// weight quantisation, and int8 convolutions with per-channel output scales. `Int8Convolution` goes through
// these; nothing else of the target names an int8 data type.

/// The 8-bit type a quantised activation is stored in: u8 for non-negative values (after ReLU), s8 elsewhere.
public enum QuantizedType: String, Codable, Sendable {
    case u8, s8

    /// The largest magnitude the type holds on the side it quantises (255 for u8, 127 for s8).
    public var levels: Float { self == .u8 ? 255 : 127 }

    var dataType: dnnl_data_type_t { self == .u8 ? dnnl_u8 : dnnl_s8 }
}

extension PrimitiveAttributes {
    /// Attributes with post-ops and output scales (one for all, or one per output channel).
    /// Rests on `dnnl_primitive_attr_set_output_scales`.
    convenience init(postOps: [PostOp], outputScales: [Float], perChannelMask: Int32) throws {
        try self.init(postOps: postOps)
        try dnnlCheck(
            "dnnl_primitive_attr_set_output_scales",
            dnnl_primitive_attr_set_output_scales(
                handle, Int64(outputScales.count),
                outputScales.count == 1 ? 0 : perChannelMask,
                outputScales))
    }
}

enum Int8Operations {
    /// Whether oneDNN's int8 kernels have VNNI here (AVX2-VNNI, AVX-512 VNNI, BF16 and AMX levels include it).
    /// Without it they multiply u8 by s8 with `vpmaddubsw`, whose pairwise sums saturate at 32767, so u8 inputs
    /// must stay within 7 bits (oneDNN's int8 guide), and s8 inputs get weights halved by oneDNN itself.
    /// Rests on `dnnl_get_effective_cpu_isa`.
    static let hasVNNI: Bool = {
        let isa = dnnl_get_effective_cpu_isa().rawValue
        return isa & dnnl_cpu_isa_avx512_core_vnni.rawValue & ~dnnl_cpu_isa_avx512_core.rawValue != 0
            || isa & dnnl_cpu_isa_avx2_vnni.rawValue & ~dnnl_cpu_isa_avx2.rawValue != 0
    }()

    /// The int8 convolution's operation descriptor: `sourceType` source, s8 weights, f32 bias, and an f32
    /// destination or (`destinationType`) an already quantised one; layouts left to oneDNN. Rests on `dnnl_dilated_convolution_forward_desc_init`.
    static func convolution(
        source: [Int], sourceType: QuantizedType, weights: [Int], destination: [Int],
        destinationType: QuantizedType?, _ g: ConvolutionGeometry
    ) throws -> ConvolutionDescriptor {
        var src = try MemoryDesc.make(source, dnnl_format_tag_any, sourceType.dataType)
        var weightsDesc = try MemoryDesc.make(weights, dnnl_format_tag_any, dnnl_s8)
        var biasDesc = try MemoryDesc.make([destination[1]], dnnl_a)
        var dst = try MemoryDesc.make(destination, dnnl_format_tag_any, destinationType?.dataType ?? dnnl_f32)
        var op = ConvolutionDescriptor()
        try dnnlCheck(
            "dnnl_dilated_convolution_forward_desc_init",
            dnnl_dilated_convolution_forward_desc_init(
                &op, dnnl_forward_inference, dnnl_convolution_direct, &src, &weightsDesc, &biasDesc, &dst,
                g.strides, g.dilation, g.left, g.right))
        return op
    }

    /// Whether `x` holds `type` values (an int8 convolution's quantised output) rather than f32.
    static func holds(_ x: Tensor, _ type: QuantizedType) -> Bool { x.desc.data_type == type.dataType }

    /// Whether `x` holds u8 or s8 values rather than f32.
    static func isQuantized(_ x: Tensor) -> Bool { holds(x, .u8) || holds(x, .s8) }

    /// `x` (f32, any layout) quantised into `target` (u8 or s8): round(x · scale), saturated.
    /// Rests on `dnnl_reorder_primitive_desc_create` with output scales.
    static func quantize(_ x: Tensor, into target: MemoryDesc, scale: Float) throws -> Tensor {
        let output = try Tensor(desc: target)
        try scaledReorder(x, into: output, scales: [scale], mask: 0)
        return output
    }

    /// `x` (f32, any layout) quantised to `type` in the channels-last layout oneDNN's int8 convolutions take:
    /// round(x · scale), saturated. Rests on `dnnl_reorder_primitive_desc_create` with output scales.
    static func quantize(_ x: Tensor, to type: QuantizedType, scale: Float) throws -> Tensor {
        let desc =
            x.shape.count == 4
            ? try channelsLast(x.shape, type)
            : try .make(x.shape, MemoryDesc.plainTag(rank: x.shape.count), type.dataType)
        return try quantize(x, into: desc, scale: scale)
    }

    /// The channels-last descriptor of [N, C, H, W] `shape` holding `type` (f32 when nil): the layout oneDNN's
    /// int8 convolutions take and give.
    static func channelsLast(_ shape: [Int], _ type: QuantizedType?) throws -> MemoryDesc {
        try .make(shape, .channelsLast, type?.dataType ?? dnnl_f32)
    }

    /// The plain ([O, I, kh, kw], row-major) s8 descriptor of convolution weights of dims `shape`.
    static func plainWeights(_ shape: [Int]) throws -> MemoryDesc {
        try .make(shape, MemoryDesc.plainTag(rank: shape.count), dnnl_s8)
    }

    /// `x` (u8 or s8 quantised with `scale`, any layout) written into the f32 tensor `output` as x / scale.
    /// Rests on `dnnl_reorder_primitive_desc_create` with output scales.
    static func dequantize(_ x: Tensor, into output: Tensor, scale: Float) throws {
        try scaledReorder(x, into: output, scales: [1 / scale], mask: 0)
    }

    /// The mean over H × W of each channel of quantised `x` [N, C, H, W] (u8 or s8), dequantised (÷ `scale`), as
    /// f32 [N, C, 1, 1]: the integer sums exact, then one division. What oneDNN's average pooling gives on `x`
    /// dequantised, without the f32 tensor (`QuantizationTests`).
    static func globalAveragePool(_ x: Tensor, scale: Float) throws -> Tensor {
        let s = x.shape
        let signed = holds(x, .s8)
        let source = try x.reordered(to: channelsLast(s, signed ? .s8 : .u8))
        let (channels, pixels) = (s[1], s[2] * s[3])
        var means = [Float](repeating: 0, count: s[0] * channels)
        source.withStorage { storage in
            let bytes = UnsafeRawPointer(storage.baseAddress!)
            for n in 0..<s[0] {
                // Each compute thread sums its own pixels (exactly, in integers, so in any order), the first
                // thread no longer alone while the second waits.
                let sums = Locked([Int](repeating: 0, count: channels))
                forEachSlice(of: 0..<pixels, minimum: max(2, (64 << 10) / max(channels, 1))) { slice in
                    let partial = channelSums(
                        bytes, signed: signed, channels: channels, pixels: slice, image: n * pixels)
                    sums.withLock { sums in for c in 0..<channels { sums[c] += partial[c] } }
                }
                sums.withLock { sums in
                    for c in 0..<channels { means[n * channels + c] = Float(sums[c]) / (Float(pixels) * scale) }
                }
            }
        }
        return try Tensor(plain: [s[0], channels, 1, 1], values: means)
    }

    /// The sums per channel of the channels-last u8 (or s8 when `signed`) `pixels`, counted from pixel `image`.
    private static func channelSums(
        _ bytes: UnsafeRawPointer, signed: Bool, channels: Int, pixels: Range<Int>, image: Int
    ) -> [Int] {
        var sums = [Int](repeating: 0, count: channels)
        // Sums of up to 2²³ bytes fit an Int32 and vectorise; longer runs add such runs into Int.
        let run = 1 << 23
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: channels) { partial in
            for first in stride(from: pixels.lowerBound, to: pixels.upperBound, by: run) {
                partial.initialize(repeating: 0)
                for pixel in first..<min(first + run, pixels.upperBound) {
                    let offset = (image + pixel) * channels
                    if signed {
                        let row = bytes.assumingMemoryBound(to: Int8.self) + offset
                        for c in 0..<channels { partial[c] &+= Int32(row[c]) }
                    } else {
                        let row = bytes.assumingMemoryBound(to: UInt8.self) + offset
                        for c in 0..<channels { partial[c] &+= Int32(row[c]) }
                    }
                }
                for c in 0..<channels { sums[c] += Int(partial[c]) }
            }
        }
        return sums
    }

    /// f32 weights (plain) quantised per output channel into the primitive's s8 layout `target`:
    /// round(w · scales[o]), with whatever compensation oneDNN's layout carries. `scales` has one entry per
    /// output channel, ordered as PyTorch orders them (group-major for grouped weights).
    static func quantizeWeights(_ plain: Tensor, into target: MemoryDesc, scales: [Float]) throws -> Tensor {
        let output = try Tensor(desc: target)
        // Output channels are dimension 0 of [O, I, k, k], dimensions 0 and 1 of grouped [G, O/G, I/G, k, k].
        try scaledReorder(plain, into: output, scales: scales, mask: plain.shape.count == 5 ? 0b11 : 0b1)
        return output
    }

    /// Rests on `dnnl_reorder_primitive_desc_create` with `dnnl_primitive_attr_set_output_scales`.
    private static func scaledReorder(_ x: Tensor, into output: Tensor, scales: [Float], mask: Int32) throws {
        let key = PrimitiveCache.Key("scaled reorder", x.desc, output.desc, scales, mask)
        let make = {
            let engine = try OneDNNEngine.shared().engine
            let attributes = try PrimitiveAttributes(postOps: [], outputScales: scales, perChannelMask: mask)
            var source = x.desc
            var destination = output.desc
            return try Primitive("quantising reorder") { pd in
                dnnl_reorder_primitive_desc_create(&pd, &source, engine, &destination, engine, attributes.handle)
            }
        }
        // Activation reorders (one scale) repeat at every forward and are cached; weight reorders run once.
        let primitive = scales.count == 1 ? try operationCache.primitive(key, make) : try make()
        try primitive.execute([(Arg.src, x), (Arg.dst, output)])
    }
}
