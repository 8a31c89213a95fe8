import COneDNN

/// A Float32 tensor held in oneDNN memory, in whatever layout the primitive that produced it preferred
/// (often channel-blocked, e.g. nChw16c). Only this target sees it; callers exchange `FloatTensor`s.
final class Tensor {
    let memory: dnnl_memory_t
    let desc: MemoryDesc
    /// The tensor whose memory a view shares (kept alive with the view).
    private let owner: Tensor?

    /// Allocates memory for `desc`. Rests on `dnnl_memory_create`.
    init(desc: MemoryDesc) throws {
        let engine = try OneDNNEngine.shared().engine
        var memory: dnnl_memory_t?
        var desc = desc
        try dnnlCheck("dnnl_memory_create", dnnl_memory_create(&memory, &desc, engine, conednn_memory_allocate()))
        guard let memory else { throw DeepLabError.oneDNN(call: "dnnl_memory_create", status: "no memory") }
        self.memory = memory
        self.desc = desc
        owner = nil
    }

    /// A view with descriptor `desc` (a submemory of `parent`'s) on `parent`'s memory.
    private init(view desc: MemoryDesc, of parent: Tensor) throws {
        let engine = try OneDNNEngine.shared().engine
        var handle: UnsafeMutableRawPointer?
        try dnnlCheck("dnnl_memory_get_data_handle", dnnl_memory_get_data_handle(parent.memory, &handle))
        var memory: dnnl_memory_t?
        var desc = desc
        try dnnlCheck("dnnl_memory_create", dnnl_memory_create(&memory, &desc, engine, handle))
        guard let memory else { throw DeepLabError.oneDNN(call: "dnnl_memory_create", status: "no memory") }
        self.memory = memory
        self.desc = desc
        owner = parent
    }

    /// The rectangle `rows` × `columns` of this [N, C, H, W] tensor as a view sharing its memory, for reorders
    /// into or out of it. Rests on `dnnl_memory_desc_init_submemory`.
    func spatialView(rows: Range<Int>, columns: Range<Int>) throws -> Tensor {
        let s = shape
        var parent = desc
        var sub = dnnl_memory_desc_t()
        let dims = [s[0], s[1], rows.count, columns.count].map(Int64.init)
        let offsets = [0, 0, rows.lowerBound, columns.lowerBound].map(Int64.init)
        try dnnlCheck("dnnl_memory_desc_init_submemory", dnnl_memory_desc_init_submemory(&sub, &parent, dims, offsets))
        return try Tensor(view: sub, of: self)
    }

    deinit { dnnl_memory_destroy(memory) }

    /// The logical dimensions (NCHW for activations).
    var shape: [Int] { desc.shape }

    /// The raw storage (including any channel padding of blocked layouts).
    /// Rests on `dnnl_memory_get_data_handle`.
    var storage: UnsafeMutableBufferPointer<Float> {
        var handle: UnsafeMutableRawPointer?
        _ = dnnl_memory_get_data_handle(memory, &handle)
        guard let handle else { return UnsafeMutableBufferPointer(start: nil, count: 0) }
        return UnsafeMutableBufferPointer(start: handle.assumingMemoryBound(to: Float.self),
                                          count: desc.byteCount / MemoryLayout<Float>.size)
    }

    /// A plain row-major tensor holding `values`.
    convenience init(plain shape: [Int], values: [Float]) throws {
        precondition(shape.reduce(1, *) == values.count, "Tensor: \(values.count) values for \(shape)")
        try self.init(desc: .make(shape, MemoryDesc.plainTag(rank: shape.count)))
        let target = storage
        values.withUnsafeBufferPointer { source in
            guard let base = source.baseAddress, values.count > 0 else { return }
            target.baseAddress?.update(from: base, count: values.count)
        }
    }

    /// A plain row-major tensor holding `tensor`'s values.
    convenience init(_ tensor: FloatTensor) throws {
        try self.init(plain: tensor.shape, values: tensor.values)
    }

    /// This tensor in `target` layout (itself when it already is). Rests on `dnnl_reorder_primitive_desc_create`.
    func reordered(to target: MemoryDesc) throws -> Tensor {
        if desc.isEqual(to: target) { return self }
        let output = try Tensor(desc: target)
        try reorder(into: output)
        return output
    }

    /// Copies (converting layouts) into `output`, which has the same logical shape.
    func reorder(into output: Tensor) throws {
        let key = PrimitiveCache.Key("reorder", desc.cacheKey, output.desc.cacheKey)
        let primitive = try Tensor.reorders.primitive(key) {
            let engine = try OneDNNEngine.shared().engine
            var source = desc, destination = output.desc
            return try Primitive("reorder") { pd in
                dnnl_reorder_primitive_desc_create(&pd, &source, engine, &destination, engine, nil)
            }
        }
        try primitive.execute([(Arg.src, self), (Arg.dst, output)])
    }

    /// The values in plain row-major order.
    func floatTensor() throws -> FloatTensor {
        let plain = try reordered(to: .make(shape, MemoryDesc.plainTag(rank: shape.count)))
        let count = shape.reduce(1, *)
        return FloatTensor(shape: shape, values: Array(plain.storage.prefix(count)))
    }

    /// A tensor of the same layout filled with zeros.
    static func zeros(like desc: MemoryDesc) throws -> Tensor {
        let t = try Tensor(desc: desc)
        t.storage.update(repeating: 0)
        return t
    }

    static let reorders = PrimitiveCache()
}
