import COneDNN

/// A Float32 tensor held in oneDNN memory, in whatever layout the primitive that produced it preferred
/// (often channel-blocked, e.g. nChw16c). Only this target sees it; callers exchange `FloatTensor`s.
final class Tensor {
    let memory: dnnl_memory_t
    let desc: MemoryDesc
    /// The tensor whose memory a view shares (kept alive with the view).
    private let owner: Tensor?
    /// The buffer this tensor took from `TensorMemory` (nil for a view).
    private let buffer: (pointer: UnsafeMutableRawPointer, bytes: Int)?

    /// Allocates memory for `desc` (from `TensorMemory`). Rests on `dnnl_memory_create`.
    ///
    /// - Throws: `DeepLabError.outOfMemory` when the system has no memory for it.
    init(desc: MemoryDesc) throws {
        let engine = try OneDNNEngine.shared().engine
        let bytes = desc.byteCount
        guard let pointer = TensorMemory.shared.allocate(bytes) else { throw DeepLabError.outOfMemory(bytes: bytes) }
        var memory: dnnl_memory_t?
        var desc = desc
        let status = dnnl_memory_create(&memory, &desc, engine, pointer)
        guard status == dnnl_success, let memory else {
            TensorMemory.shared.release(pointer, bytes: bytes)
            try dnnlCheck("dnnl_memory_create", status == dnnl_success ? dnnl_out_of_memory : status)
            throw DeepLabError.oneDNN(call: "dnnl_memory_create", status: "no memory")
        }
        self.memory = memory
        self.desc = desc
        owner = nil
        buffer = (pointer, bytes)
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
        buffer = nil
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

    /// This tensor's memory seen through `desc`, which must fit in it: the first pixels of a channels-last row
    /// (this tensor itself when `desc` is its own).
    func prefixView(_ desc: MemoryDesc) throws -> Tensor {
        if desc.isEqual(to: self.desc) { return self }
        precondition(desc.byteCount <= self.desc.byteCount, "a view larger than its tensor")
        return try Tensor(view: desc, of: self)
    }

    deinit {
        dnnl_memory_destroy(memory)
        if let buffer { TensorMemory.shared.release(buffer.pointer, bytes: buffer.bytes) }
    }

    /// The logical dimensions (NCHW for activations).
    var shape: [Int] { desc.shape }

    /// Calls `body` with the raw storage (including any channel padding of blocked layouts), keeping the tensor
    /// alive meanwhile: a pointer into a tensor must not outlive it, and Swift may release an object right after
    /// its last use.
    func withStorage<R>(_ body: (UnsafeMutableBufferPointer<Float>) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(storage) }
    }

    /// The raw storage. Rests on `dnnl_memory_get_data_handle`.
    private var storage: UnsafeMutableBufferPointer<Float> {
        var handle: UnsafeMutableRawPointer?
        _ = dnnl_memory_get_data_handle(memory, &handle)
        guard let handle else { return UnsafeMutableBufferPointer(start: nil, count: 0) }
        return UnsafeMutableBufferPointer(
            start: handle.assumingMemoryBound(to: Float.self),
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
        try reorder(into: output, adding: false)
    }

    /// Adds this tensor's values into `output` (the same logical shape, any layouts, views included).
    func accumulate(into output: Tensor) throws {
        try reorder(into: output, adding: true)
    }

    /// Rests on `dnnl_reorder_primitive_desc_create`, with a sum post-op when `adding`.
    private func reorder(into output: Tensor, adding: Bool) throws {
        let key = PrimitiveCache.Key("reorder", adding, desc, output.desc)
        let primitive = try Tensor.reorders.primitive(key) {
            let engine = try OneDNNEngine.shared().engine
            let attributes = adding ? try PrimitiveAttributes(postOps: [.sum]) : nil
            var source = desc
            var destination = output.desc
            return try Primitive(adding ? "accumulating reorder" : "reorder") { pd in
                dnnl_reorder_primitive_desc_create(&pd, &source, engine, &destination, engine, attributes?.handle)
            }
        }
        try primitive.execute([(Arg.src, self), (Arg.dst, output)])
    }

    /// The values in plain row-major order.
    func floatTensor() throws -> FloatTensor {
        let plain = try reordered(to: .make(shape, MemoryDesc.plainTag(rank: shape.count)))
        let count = shape.reduce(1, *)
        return FloatTensor(shape: shape, values: plain.withStorage { Array($0.prefix(count)) })
    }

    /// A tensor of the same layout filled with zeros.
    static func zeros(like desc: MemoryDesc) throws -> Tensor {
        let t = try Tensor(desc: desc)
        t.withStorage { $0.update(repeating: 0) }
        return t
    }

    static let reorders = PrimitiveCache()
}
