// Raw oneDNN calls: status checking, the CPU engine and stream, memory descriptors and layout tags, primitives
// and their execution, GEMM. With the other files of Primitives/ (`Tensor`, the stateless `Operations` and their
// backward passes, the layers' operation descriptors in `LayerOperations.swift`) these are the only files of the
// target that name oneDNN; layers, `ConvUnit` and its convolution strategies go through their Swift wrappers.
import COneDNN
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Throws `DeepLabError.oneDNN` naming `call` when `status` is not success.
@inline(__always)
func dnnlCheck(_ call: @autoclosure () -> String, _ status: dnnl_status_t) throws {
    guard status == dnnl_success else {
        let text = dnnl_status2str(status).map { String(cString: $0) } ?? "status \(status.rawValue)"
        throw DeepLabError.oneDNN(call: call(), status: text)
    }
}

/// The process-wide CPU engine and its in-order stream. Rests on `dnnl_engine_create`, `dnnl_stream_create`.
// @unchecked Sendable: two immutable handles; oneDNN engines are thread-safe, and the stream is used only under
// `Primitive.streamLock`.
final class OneDNNEngine: @unchecked Sendable {
    let engine: dnnl_engine_t
    let stream: dnnl_stream_t

    private init() throws {
        var engine: dnnl_engine_t?
        try dnnlCheck("dnnl_engine_create", dnnl_engine_create(&engine, dnnl_cpu, 0))
        guard let engine else { throw DeepLabError.oneDNN(call: "dnnl_engine_create", status: "no engine") }
        var stream: dnnl_stream_t?
        try dnnlCheck("dnnl_stream_create", dnnl_stream_create(&stream, engine, dnnl_stream_default_flags.rawValue))
        guard let stream else { throw DeepLabError.oneDNN(call: "dnnl_stream_create", status: "no stream") }
        self.engine = engine
        self.stream = stream
    }

    private static let result = Result { try OneDNNEngine() }

    /// The shared engine; creating it fails only when oneDNN cannot use this CPU.
    static func shared() throws -> OneDNNEngine { try result.get() }
}

// MARK: - Memory descriptors

typealias MemoryDesc = dnnl_memory_desc_t

/// A memory layout tag (`dnnl_format_tag_t`).
typealias FormatTag = dnnl_format_tag_t

extension FormatTag {
    /// Channels blocked by 8 (`nChw8c`), the layout of the engine's Winograd convolution.
    static let channelBlocked8 = dnnl_aBcd8b
    /// Channels last (`nhwc`), the layout of the fused inverted-residual blocks.
    static let channelsLast = dnnl_acdb
}

extension dnnl_memory_desc_t {
    /// A descriptor with dims and a format tag (`dnnl_nchw`, `dnnl_format_tag_any`, …).
    /// Rests on `dnnl_memory_desc_init_by_tag`.
    static func make(_ dims: [Int], _ tag: FormatTag, _ type: dnnl_data_type_t = dnnl_f32) throws -> MemoryDesc {
        var desc = dnnl_memory_desc_t()
        let d = dims.map(Int64.init)
        try dnnlCheck("dnnl_memory_desc_init_by_tag", dnnl_memory_desc_init_by_tag(&desc, Int32(d.count), d, type, tag))
        return desc
    }

    /// The plain row-major tag for `rank` dimensions.
    static func plainTag(rank: Int) -> FormatTag {
        switch rank {
        case 1: return dnnl_a
        case 2: return dnnl_ab
        case 3: return dnnl_abc
        case 4: return dnnl_abcd
        default: return dnnl_abcde
        }
    }

    /// The format tag among channel-blocked (16, 8), channels-last and plain NCHW that describes this 4-D
    /// descriptor; plain NCHW when none does.
    static func formatTag(of desc: MemoryDesc) -> FormatTag {
        let candidates = [dnnl_aBcd16b, dnnl_aBcd8b, dnnl_acdb, dnnl_abcd]
        return candidates.first { tag in (try? MemoryDesc.make(desc.shape, tag))?.isEqual(to: desc) == true }
            ?? dnnl_abcd
    }

    /// The logical dimensions.
    var shape: [Int] {
        withUnsafeBytes(of: dims) { raw in
            Array(raw.bindMemory(to: Int64.self).prefix(Int(ndims))).map(Int.init)
        }
    }

    /// Bytes needed by memory of this descriptor. Rests on `dnnl_memory_desc_get_size`.
    var byteCount: Int { withUnsafePointer(to: self) { dnnl_memory_desc_get_size($0) } }

    /// Whether two descriptors describe the same layout. Rests on `dnnl_memory_desc_equal`.
    func isEqual(to other: MemoryDesc) -> Bool {
        withUnsafePointer(to: self) { a in withUnsafePointer(to: other) { b in dnnl_memory_desc_equal(a, b) != 0 } }
    }
}

/// A value that can be part of a `PrimitiveCache.Key`: it appends bytes that determine it among the values of its
/// type (a variable-length value begins with its length, so that the parts after it cannot run together with it).
protocol PrimitiveKeyPart {
    func appendKeyBytes(to bytes: inout [UInt8])
}

/// A key part whose memory representation is its value: no padding, no pointers, no enum payloads, so that equal
/// values have equal bytes.
protocol RawKeyPart: PrimitiveKeyPart {}

extension RawKeyPart {
    func appendKeyBytes(to bytes: inout [UInt8]) { withUnsafeBytes(of: self) { bytes.append(contentsOf: $0) } }
}

extension Int: RawKeyPart {}
extension Int32: RawKeyPart {}
extension UInt32: RawKeyPart {}
extension UInt8: RawKeyPart {}
extension Float: RawKeyPart {}
extension Bool: RawKeyPart {}
// oneDNN initialises a descriptor whole, padding and reserved fields included, so equal descriptors have equal bytes.
extension MemoryDesc: RawKeyPart {}

extension Array: PrimitiveKeyPart where Element: RawKeyPart {
    func appendKeyBytes(to bytes: inout [UInt8]) {
        count.appendKeyBytes(to: &bytes)
        withUnsafeBytes { bytes.append(contentsOf: $0) }
    }
}

extension String: PrimitiveKeyPart {
    func appendKeyBytes(to bytes: inout [UInt8]) {
        utf8.count.appendKeyBytes(to: &bytes)
        bytes.append(contentsOf: utf8)
    }
}

extension Optional: PrimitiveKeyPart where Wrapped: PrimitiveKeyPart {
    func appendKeyBytes(to bytes: inout [UInt8]) {
        bytes.append(self == nil ? 0 : 1)
        self?.appendKeyBytes(to: &bytes)
    }
}

extension ClosedRange: PrimitiveKeyPart where Bound == Int {
    func appendKeyBytes(to bytes: inout [UInt8]) {
        lowerBound.appendKeyBytes(to: &bytes)
        upperBound.appendKeyBytes(to: &bytes)
    }
}

extension PrimitiveAttributes.PostOp: PrimitiveKeyPart {
    func appendKeyBytes(to bytes: inout [UInt8]) {
        switch self {
        case .sum: bytes.append(0)
        case .scaledSum(let scale):
            bytes.append(1)
            scale.appendKeyBytes(to: &bytes)
        case .relu: bytes.append(2)
        case .clip(let low, let high):
            bytes.append(3)
            low.appendKeyBytes(to: &bytes)
            high.appendKeyBytes(to: &bytes)
        }
    }
}

extension PrimitiveCache.Key: PrimitiveKeyPart {
    func appendKeyBytes(to bytes: inout [UInt8]) { self.bytes.appendKeyBytes(to: &bytes) }
}

// MARK: - Primitives

/// A primitive descriptor and its primitive, owned together. Rests on `dnnl_primitive_desc_create` (or a
/// reorder/concat/sum creator) and `dnnl_primitive_create`.
final class Primitive {
    let descriptor: dnnl_primitive_desc_t
    let primitive: dnnl_primitive_t
    let name: String

    /// Wraps a primitive descriptor made by `create`, taking ownership of it.
    init(_ name: String, _ create: (inout dnnl_primitive_desc_t?) -> dnnl_status_t) throws {
        let start = LayerProfiling.collector != nil ? DispatchTime.now().uptimeNanoseconds : nil
        defer {
            if let start {
                LayerProfiling.noteCreation(seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            }
        }
        var pd: dnnl_primitive_desc_t?
        try dnnlCheck("\(name) primitive descriptor", create(&pd))
        guard let pd else { throw DeepLabError.oneDNN(call: name, status: "no primitive descriptor") }
        var primitive: dnnl_primitive_t?
        let status = dnnl_primitive_create(&primitive, pd)
        guard status == dnnl_success, let primitive else {
            dnnl_primitive_desc_destroy(pd)
            try dnnlCheck("\(name) dnnl_primitive_create", status == dnnl_success ? dnnl_runtime_error : status)
            throw DeepLabError.oneDNN(call: name, status: "no primitive")
        }
        self.descriptor = pd
        self.primitive = primitive
        self.name = name
    }

    /// A primitive from an operation descriptor (convolution, pooling, …), with optional attributes and a
    /// forward hint for backward primitives.
    convenience init<Op>(_ name: String, op: Op, attributes: PrimitiveAttributes? = nil, hint: Primitive? = nil) throws
    {
        let engine = try OneDNNEngine.shared().engine
        var op = op
        try self.init(name) { pd in
            withUnsafePointer(to: &op) {
                dnnl_primitive_desc_create(&pd, $0, attributes?.handle, engine, hint?.descriptor)
            }
        }
    }

    /// A primitive from an operation descriptor on the first of oneDNN's implementations, in its order of
    /// preference, that `avoiding` does not reject (by its `implementation` name); oneDNN's first when it rejects
    /// them all. Rests on `dnnl_primitive_desc_iterator_create`, `…_next`, `…_fetch`.
    convenience init<Op>(
        _ name: String, op: Op, attributes: PrimitiveAttributes? = nil, avoiding: (String) -> Bool
    ) throws {
        let engine = try OneDNNEngine.shared().engine
        var op = op
        try self.init(name) { pd in
            var iterator: dnnl_primitive_desc_iterator_t?
            let status = withUnsafePointer(to: &op) {
                dnnl_primitive_desc_iterator_create(&iterator, $0, attributes?.handle, engine, nil)
            }
            guard status == dnnl_success, let iterator else { return status }
            defer { dnnl_primitive_desc_iterator_destroy(iterator) }
            var first: dnnl_primitive_desc_t?
            repeat {
                guard let candidate = dnnl_primitive_desc_iterator_fetch(iterator) else { break }
                if !avoiding(Primitive.implementation(of: candidate)) {
                    if let first { dnnl_primitive_desc_destroy(first) }
                    pd = candidate
                    return dnnl_success
                }
                if first == nil { first = candidate } else { dnnl_primitive_desc_destroy(candidate) }
            } while dnnl_primitive_desc_iterator_next(iterator) == dnnl_success
            pd = first
            return first == nil ? dnnl_unimplemented : dnnl_success
        }
    }

    deinit {
        dnnl_primitive_destroy(primitive)
        dnnl_primitive_desc_destroy(descriptor)
    }

    /// The memories a primitive reads and writes, as `desc(_:_:)` asks for them.
    enum Role {
        case source, weights, destination, workspace, diffSource, diffWeights, diffDestination

        var query: dnnl_query_t {
            switch self {
            case .source: return dnnl_query_src_md
            case .weights: return dnnl_query_weights_md
            case .destination: return dnnl_query_dst_md
            case .workspace: return dnnl_query_workspace_md
            case .diffSource: return dnnl_query_diff_src_md
            case .diffWeights: return dnnl_query_diff_weights_md
            case .diffDestination: return dnnl_query_diff_dst_md
            }
        }
    }

    /// The memory descriptor the primitive expects for `role` (`index` 1 for a bias or a batch norm's mean, 2
    /// for its variance). Rests on `dnnl_primitive_desc_query_md`.
    func desc(_ role: Role, _ index: Int32 = 0) -> MemoryDesc {
        guard let md = dnnl_primitive_desc_query_md(descriptor, role.query, index) else { return dnnl_memory_desc_t() }
        return md.pointee
    }

    /// The implementation oneDNN chose (`jit:avx2`, `gemm:jit`, …).
    var implementation: String { Primitive.implementation(of: descriptor) }

    /// The implementation of a primitive descriptor, "" when oneDNN names none. Rests on
    /// `dnnl_primitive_desc_query`.
    static func implementation(of descriptor: const_dnnl_primitive_desc_t) -> String {
        var info: UnsafePointer<CChar>?
        guard dnnl_primitive_desc_query(descriptor, dnnl_query_impl_info_str, 0, &info) == dnnl_success,
            let info
        else { return "" }
        return String(cString: info)
    }

    /// Whether a convolution runs on a direct kernel rather than a GEMM or reference fallback.
    var isDirectKernel: Bool { !(implementation.contains("gemm") || implementation.hasPrefix("ref")) }

    /// Serialises use of the shared stream across threads (a oneDNN stream is not meant to be shared).
    private static let streamLock = NSLock()

    /// Runs the primitive on the shared stream and waits. Rests on `dnnl_primitive_execute`, `dnnl_stream_wait`.
    func execute(_ arguments: [(Int32, Tensor)]) throws {
        let stream = try OneDNNEngine.shared().stream
        Primitive.streamLock.lock()
        defer { Primitive.streamLock.unlock() }
        let args = arguments.map { dnnl_exec_arg_t(arg: $0.0, memory: $0.1.memory) }
        try dnnlCheck(
            "\(name) dnnl_primitive_execute",
            dnnl_primitive_execute(primitive, stream, Int32(args.count), args))
        try dnnlCheck("dnnl_stream_wait", dnnl_stream_wait(stream))
        withExtendedLifetime(arguments) {}
        if LayerProfiling.collector != nil {
            LayerProfiling.note(bytes: arguments.reduce(0) { $0 + $1.1.desc.byteCount }) {
                name.contains("convolution") ? implementation : nil
            }
        }
    }
}

/// Primitive attributes: post-ops (ReLU, clip, sum). Rests on `dnnl_primitive_attr_create`.
final class PrimitiveAttributes {
    let handle: dnnl_primitive_attr_t

    /// Post-operations applied after a convolution's sum.
    enum PostOp: Hashable {
        case sum
        /// dst = result + scale · dst (an int8 destination's previous values read as integers).
        case scaledSum(Float)
        case relu
        case clip(Float, Float)
    }

    init(postOps: [PostOp]) throws {
        var attr: dnnl_primitive_attr_t?
        try dnnlCheck("dnnl_primitive_attr_create", dnnl_primitive_attr_create(&attr))
        guard let attr else { throw DeepLabError.oneDNN(call: "dnnl_primitive_attr_create", status: "no attr") }
        handle = attr
        var ops: dnnl_post_ops_t?
        try dnnlCheck("dnnl_post_ops_create", dnnl_post_ops_create(&ops))
        guard let ops else { return }
        defer { dnnl_post_ops_destroy(ops) }
        for op in postOps {
            switch op {
            case .sum: try dnnlCheck("dnnl_post_ops_append_sum", dnnl_post_ops_append_sum(ops, 1))
            case .scaledSum(let scale):
                try dnnlCheck("dnnl_post_ops_append_sum", dnnl_post_ops_append_sum(ops, scale))
            case .relu:
                try dnnlCheck(
                    "dnnl_post_ops_append_eltwise", dnnl_post_ops_append_eltwise(ops, 1, dnnl_eltwise_relu, 0, 0))
            case .clip(let low, let high):
                try dnnlCheck(
                    "dnnl_post_ops_append_eltwise",
                    dnnl_post_ops_append_eltwise(ops, 1, dnnl_eltwise_clip_v2, low, high))
            }
        }
        try dnnlCheck("dnnl_primitive_attr_set_post_ops", dnnl_primitive_attr_set_post_ops(handle, ops))
    }

    deinit { dnnl_primitive_attr_destroy(handle) }
}

/// An element-wise function (`dnnl_alg_kind_t`).
typealias EltwiseAlgorithm = dnnl_alg_kind_t

extension EltwiseAlgorithm {
    /// ReLU whose backward reads the forward's output (so it may run in place).
    static let reluUsingDestination = dnnl_eltwise_relu_use_dst_for_bwd
    /// Clip to [α, β] (ReLU6 with 0, 6) whose backward reads the forward's output.
    static let clipUsingDestination = dnnl_eltwise_clip_v2_use_dst_for_bwd
}

/// Argument slots of `Primitive.execute`.
enum Arg {
    static let src = conednn_arg_src()
    static let src1 = conednn_arg_src_1()
    static let dst = conednn_arg_dst()
    static let weights = conednn_arg_weights()
    static let bias = conednn_arg_bias()
    static let mean = conednn_arg_mean()
    static let variance = conednn_arg_variance()
    static let scale = conednn_arg_scale()
    static let shift = conednn_arg_shift()
    static let workspace = conednn_arg_workspace()
    static let diffSrc = conednn_arg_diff_src()
    static let diffDst = conednn_arg_diff_dst()
    static let diffWeights = conednn_arg_diff_weights()
    static let diffBias = conednn_arg_diff_bias()
    static let diffScale = conednn_arg_diff_scale()
    static let diffShift = conednn_arg_diff_shift()
    static func multipleSrc(_ i: Int) -> Int32 { conednn_arg_multiple_src() + Int32(i) }
}

/// A cache of primitives keyed by what determines them (kind, shapes, layouts, hyperparameters). Safe to share
/// between threads (models on different threads share the stateless operations' cache).
// @unchecked Sendable: `entries` is read and written under `lock` only; primitives are immutable once created.
final class PrimitiveCache: @unchecked Sendable {
    private var entries: [Key: Primitive] = [:]
    private let lock = NSLock()

    /// What determines a primitive, as bytes: each part appends its own (`PrimitiveKeyPart`), arrays and strings
    /// with their length. Compared and hashed as one byte string: keys of `AnyHashable` parts were hashed and compared
    /// through boxes and dynamic casts on every lookup, 5 % of an int8 forward of the bundled model.
    struct Key: Hashable {
        private(set) var bytes: [UInt8] = []

        init(_ parts: any PrimitiveKeyPart...) {
            bytes.reserveCapacity(64)
            for part in parts { part.appendKeyBytes(to: &bytes) }
        }

        /// Appends `part` after the parts already in the key.
        mutating func append(_ part: some PrimitiveKeyPart) { part.appendKeyBytes(to: &bytes) }

        func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    func primitive(_ key: Key, _ make: () throws -> Primitive) throws -> Primitive {
        lock.lock()
        defer { lock.unlock() }
        if let p = entries[key] { return p }
        let p = try make()
        entries[key] = p
        return p
    }
}

/// The instruction set oneDNN's kernels use on this CPU (after any `ONEDNN_MAX_CPU_ISA` cap), as the cap's
/// values name it: "AVX2", "AVX512_CORE", "AVX512_CORE_AMX", … Rests on `dnnl_get_effective_cpu_isa`.
public var oneDNNEffectiveISA: String {
    switch dnnl_get_effective_cpu_isa() {
    case dnnl_cpu_isa_sse41: return "SSE41"
    case dnnl_cpu_isa_avx: return "AVX"
    case dnnl_cpu_isa_avx2: return "AVX2"
    case dnnl_cpu_isa_avx2_vnni: return "AVX2_VNNI"
    case dnnl_cpu_isa_avx512_mic: return "AVX512_MIC"
    case dnnl_cpu_isa_avx512_mic_4ops: return "AVX512_MIC_4OPS"
    case dnnl_cpu_isa_avx512_core: return "AVX512_CORE"
    case dnnl_cpu_isa_avx512_core_vnni: return "AVX512_CORE_VNNI"
    case dnnl_cpu_isa_avx512_core_bf16: return "AVX512_CORE_BF16"
    case dnnl_cpu_isa_avx512_core_amx: return "AVX512_CORE_AMX"
    case let other: return "ISA 0x\(String(other.rawValue, radix: 16))"
    }
}

/// The version of oneDNN underneath the engine, e.g. "2.6.3". Rests on `dnnl_version`.
public var oneDNNVersion: String {
    guard let v = dnnl_version() else { return "unknown" }
    return "\(v.pointee.major).\(v.pointee.minor).\(v.pointee.patch)"
}
