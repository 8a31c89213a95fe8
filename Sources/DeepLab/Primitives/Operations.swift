import COneDNN

// Stateless oneDNN operations on `Tensor`s, each creating its primitive once per (shape, layout) and caching
// it. Layers compose these; convolution and batch norm live in their layer types because they own weights.

/// The cache shared by the stateless operations.
let operationCache = PrimitiveCache()

/// Spatial geometry of a 2-D window (convolution or pooling), in PyTorch's terms.
struct Window: Hashable, RawKeyPart {
    var kernel: Int
    var stride: Int
    var padding: Int
    var dilation: Int = 1

    /// Output extent for `input`, as PyTorch computes it (floor mode).
    func outputExtent(_ input: Int) -> Int {
        (input + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1
    }

    /// oneDNN's right/bottom padding that makes `output` consistent with PyTorch's floor mode.
    func trailingPadding(input: Int, output: Int) -> Int {
        (output - 1) * stride + dilation * (kernel - 1) + 1 - input - padding
    }
}

/// Argument slots for a forward result and any workspace a backward pass needs.
struct PoolingResult {
    let output: Tensor
    let workspace: Tensor?
    let primitive: Primitive
}

enum Operations {
    /// Max pooling (PyTorch `MaxPool2d(kernel, stride, padding)`, floor mode). In training the workspace for
    /// backward is returned. Rests on `dnnl_pooling_v2_forward_desc_init`.
    static func maxPool(_ x: Tensor, _ window: Window, training: Bool) throws -> PoolingResult {
        let s = x.shape
        let oh = window.outputExtent(s[2])
        let ow = window.outputExtent(s[3])
        let key = PrimitiveCache.Key("maxpool", x.desc, window, training)
        let primitive = try operationCache.primitive(key) {
            var src = x.desc
            var dst = try MemoryDesc.make([s[0], s[1], oh, ow], dnnl_format_tag_any)
            var op = dnnl_pooling_v2_desc_t()
            let k: [Int64] = [Int64(window.kernel), Int64(window.kernel)]
            let st: [Int64] = [Int64(window.stride), Int64(window.stride)]
            let dil: [Int64] = [Int64(window.dilation - 1), Int64(window.dilation - 1)]
            let pl: [Int64] = [Int64(window.padding), Int64(window.padding)]
            let pr: [Int64] = [
                Int64(window.trailingPadding(input: s[2], output: oh)),
                Int64(window.trailingPadding(input: s[3], output: ow))
            ]
            try dnnlCheck(
                "dnnl_pooling_v2_forward_desc_init",
                dnnl_pooling_v2_forward_desc_init(
                    &op, training ? dnnl_forward_training : dnnl_forward_inference, dnnl_pooling_max,
                    &src, &dst, st, k, dil, pl, pr))
            return try Primitive("max pooling", op: op)
        }
        let output = try Tensor(desc: primitive.desc(.destination))
        var arguments: [(Int32, Tensor)] = [(Arg.src, x), (Arg.dst, output)]
        var workspace: Tensor?
        if training {
            let ws = try Tensor(desc: primitive.desc(.workspace))
            arguments.append((Arg.workspace, ws))
            workspace = ws
        }
        try primitive.execute(arguments)
        return PoolingResult(output: output, workspace: workspace, primitive: primitive)
    }

    /// Global average pooling to 1×1 (PyTorch `AdaptiveAvgPool2d(1)`). Rests on `dnnl_pooling_v2_forward_desc_init`.
    static func globalAveragePool(_ x: Tensor, training: Bool) throws -> PoolingResult {
        let s = x.shape
        let key = PrimitiveCache.Key("gap", x.desc, training)
        let primitive = try operationCache.primitive(key) {
            var src = x.desc
            var dst = try MemoryDesc.make([s[0], s[1], 1, 1], dnnl_format_tag_any)
            var op = dnnl_pooling_v2_desc_t()
            let k: [Int64] = [Int64(s[2]), Int64(s[3])]
            let one: [Int64] = [1, 1]
            let zero: [Int64] = [0, 0]
            try dnnlCheck(
                "dnnl_pooling_v2_forward_desc_init",
                dnnl_pooling_v2_forward_desc_init(
                    &op, training ? dnnl_forward_training : dnnl_forward_inference, dnnl_pooling_avg_exclude_padding,
                    &src, &dst, one, k, zero, zero, zero))
            return try Primitive("global average pooling", op: op)
        }
        let output = try Tensor(desc: primitive.desc(.destination))
        try primitive.execute([(Arg.src, x), (Arg.dst, output)])
        return PoolingResult(output: output, workspace: nil, primitive: primitive)
    }

    /// Bilinear resampling to `height`×`width`, matching `torch.nn.functional.interpolate(mode="bilinear",
    /// align_corners=False)` with an output size. Rests on `dnnl_resampling_forward_desc_init`.
    static func resizeBilinear(_ x: Tensor, height: Int, width: Int, training: Bool) throws -> (Tensor, Primitive) {
        let s = x.shape
        let key = PrimitiveCache.Key("resize", x.desc, height, width, training)
        let primitive = try operationCache.primitive(key) {
            var src = x.desc
            var dst = try MemoryDesc.make([s[0], s[1], height, width], dnnl_format_tag_any)
            var op = dnnl_resampling_desc_t()
            try dnnlCheck(
                "dnnl_resampling_forward_desc_init",
                dnnl_resampling_forward_desc_init(
                    &op, training ? dnnl_forward_training : dnnl_forward_inference, dnnl_resampling_linear, nil,
                    &src, &dst))
            return try Primitive("bilinear resampling", op: op)
        }
        let output = try Tensor(desc: primitive.desc(.destination))
        try primitive.execute([(Arg.src, x), (Arg.dst, output)])
        return (output, primitive)
    }

    /// Concatenation along channels. Rests on `dnnl_concat_primitive_desc_create`.
    static func concatenate(_ tensors: [Tensor]) throws -> Tensor {
        let key = tensors.reduce(into: PrimitiveCache.Key("concat")) { $0.append($1.desc) }
        let primitive = try operationCache.primitive(key) {
            let engine = try OneDNNEngine.shared().engine
            let sources = tensors.map(\.desc)
            return try Primitive("concat") { pd in
                sources.withUnsafeBufferPointer {
                    dnnl_concat_primitive_desc_create(&pd, nil, Int32(sources.count), 1, $0.baseAddress, nil, engine)
                }
            }
        }
        let output = try Tensor(desc: primitive.desc(.destination))
        var arguments: [(Int32, Tensor)] = [(Arg.dst, output)]
        for (i, t) in tensors.enumerated() { arguments.append((Arg.multipleSrc(i), t)) }
        try primitive.execute(arguments)
        return output
    }

    /// Element-wise sum of same-shaped tensors, in the first one's layout. Rests on `dnnl_sum_primitive_desc_create`.
    static func sum(_ tensors: [Tensor]) throws -> Tensor {
        let target = tensors[0].desc
        let sources = try tensors.map { try $0.reordered(to: target) }
        let key = PrimitiveCache.Key("sum", target, sources.count)
        let primitive = try operationCache.primitive(key) {
            let engine = try OneDNNEngine.shared().engine
            let descs = [MemoryDesc](repeating: target, count: sources.count)
            let scales = [Float](repeating: 1, count: sources.count)
            var dst = target
            return try Primitive("sum") { pd in
                descs.withUnsafeBufferPointer {
                    dnnl_sum_primitive_desc_create(&pd, &dst, Int32(descs.count), scales, $0.baseAddress, nil, engine)
                }
            }
        }
        let output = try Tensor(desc: target)
        var arguments: [(Int32, Tensor)] = [(Arg.dst, output)]
        for (i, t) in sources.enumerated() { arguments.append((Arg.multipleSrc(i), t)) }
        try primitive.execute(arguments)
        return output
    }

    /// An element-wise function (`dnnl_eltwise_relu`, `dnnl_eltwise_clip_v2` with bounds, …), into a new tensor
    /// or, `inPlace`, into `x` itself (which is returned).
    /// Rests on `dnnl_eltwise_forward_desc_init`.
    static func eltwise(
        _ x: Tensor, _ algorithm: dnnl_alg_kind_t, alpha: Float = 0, beta: Float = 0,
        training: Bool, inPlace: Bool = false
    ) throws -> (Tensor, Primitive) {
        let key = PrimitiveCache.Key("eltwise", x.desc, algorithm.rawValue, alpha, beta, training)
        let primitive = try operationCache.primitive(key) {
            var data = x.desc
            var op = dnnl_eltwise_desc_t()
            try dnnlCheck(
                "dnnl_eltwise_forward_desc_init",
                dnnl_eltwise_forward_desc_init(
                    &op, training ? dnnl_forward_training : dnnl_forward_inference, algorithm, &data, alpha, beta))
            return try Primitive("eltwise", op: op)
        }
        let output = inPlace ? x : try Tensor(desc: x.desc)
        try primitive.execute([(Arg.src, x), (Arg.dst, output)])
        return (output, primitive)
    }

    /// Softmax over channels (dimension 1). Rests on `dnnl_softmax_forward_desc_init`.
    static func softmax(_ x: Tensor) throws -> Tensor {
        let key = PrimitiveCache.Key("softmax", x.desc)
        let primitive = try operationCache.primitive(key) {
            var data = x.desc
            var op = dnnl_softmax_desc_t()
            try dnnlCheck(
                "dnnl_softmax_forward_desc_init",
                dnnl_softmax_forward_desc_init(&op, dnnl_forward_inference, &data, 1))
            return try Primitive("softmax", op: op)
        }
        let output = try Tensor(desc: x.desc)
        try primitive.execute([(Arg.src, x), (Arg.dst, output)])
        return output
    }
}
