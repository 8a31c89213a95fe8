import COneDNN

// Backward passes of the stateless operations, each given the forward primitive as its hint.

extension Operations {
    /// dLoss/dSource of a `*_use_dst_for_bwd` element-wise function from dLoss/dDestination and the forward's
    /// `destination`. Rests on `dnnl_eltwise_backward_desc_init`.
    static func eltwiseBackward(
        _ dy: Tensor, destination: Tensor, forward: Primitive,
        primitives: PrimitiveCache = operationCache
    ) throws -> Tensor {
        var algorithm = dnnl_alg_kind_undef
        var alpha: Float = 0
        var beta: Float = 0
        var forwardOp: UnsafeRawPointer?
        _ = dnnl_primitive_desc_query(forward.descriptor, dnnl_query_eltwise_d, 0, &forwardOp)
        if let d = forwardOp?.assumingMemoryBound(to: dnnl_eltwise_desc_t.self).pointee {
            algorithm = d.alg_kind
            alpha = d.alpha
            beta = d.beta
        }
        let key = PrimitiveCache.Key("eltwise-backward", destination.desc, algorithm.rawValue, alpha, beta)
        let primitive = try primitives.primitive(key) {
            var data = destination.desc
            var op = dnnl_eltwise_desc_t()
            try dnnlCheck(
                "dnnl_eltwise_backward_desc_init",
                dnnl_eltwise_backward_desc_init(&op, algorithm, &data, &data, alpha, beta))
            return try Primitive("eltwise backward", op: op, hint: forward)
        }
        let output = try Tensor(desc: destination.desc)
        try primitive.execute([
            (Arg.dst, destination), (Arg.diffDst, try dy.reordered(to: destination.desc)),
            (Arg.diffSrc, output)
        ])
        return output
    }

    /// dLoss/dSource of a pooling (max with its workspace, or global average). Rests on
    /// `dnnl_pooling_v2_backward_desc_init`.
    static func poolingBackward(_ dy: Tensor, forward: PoolingResult, sourceShape s: [Int]) throws -> Tensor {
        var forwardOp: UnsafeRawPointer?
        _ = dnnl_primitive_desc_query(forward.primitive.descriptor, dnnl_query_pooling_v2_d, 0, &forwardOp)
        guard var d = forwardOp?.assumingMemoryBound(to: dnnl_pooling_v2_desc_t.self).pointee else {
            throw DeepLabError.oneDNN(call: "dnnl_primitive_desc_query", status: "no pooling descriptor")
        }
        let destination = forward.output.desc
        let key = PrimitiveCache.Key("pool-backward", destination, s, d.alg_kind.rawValue)
        let primitive = try operationCache.primitive(key) {
            var diffSrc = try MemoryDesc.make(s, dnnl_format_tag_any)
            var diffDst = destination
            var op = dnnl_pooling_v2_desc_t()
            let status = withUnsafePointer(to: &d.strides) { strides in
                withUnsafePointer(to: &d.kernel) { kernel in
                    withUnsafePointer(to: &d.dilation) { dilation in
                        withUnsafePointer(to: &d.padding.0) { left in
                            withUnsafePointer(to: &d.padding.1) { right in
                                dnnl_pooling_v2_backward_desc_init(
                                    &op, d.alg_kind, &diffSrc, &diffDst,
                                    UnsafeRawPointer(strides).assumingMemoryBound(to: Int64.self),
                                    UnsafeRawPointer(kernel).assumingMemoryBound(to: Int64.self),
                                    UnsafeRawPointer(dilation).assumingMemoryBound(to: Int64.self),
                                    UnsafeRawPointer(left).assumingMemoryBound(to: Int64.self),
                                    UnsafeRawPointer(right).assumingMemoryBound(to: Int64.self))
                            }
                        }
                    }
                }
            }
            try dnnlCheck("dnnl_pooling_v2_backward_desc_init", status)
            return try Primitive("pooling backward", op: op, hint: forward.primitive)
        }
        let output = try Tensor(desc: primitive.desc(.diffSource))
        var arguments: [(Int32, Tensor)] = [(Arg.diffDst, try dy.reordered(to: destination)), (Arg.diffSrc, output)]
        if let ws = forward.workspace { arguments.append((Arg.workspace, ws)) }
        try primitive.execute(arguments)
        return output
    }

    /// dLoss/dSource of bilinear resampling. Rests on `dnnl_resampling_backward_desc_init`.
    static func resizeBackward(_ dy: Tensor, forward: Primitive, sourceShape s: [Int]) throws -> Tensor {
        let destination = forward.desc(.destination)
        let key = PrimitiveCache.Key("resize-backward", destination, s)
        let primitive = try operationCache.primitive(key) {
            var diffSrc = try MemoryDesc.make(s, dnnl_format_tag_any)
            var diffDst = destination
            var op = dnnl_resampling_desc_t()
            try dnnlCheck(
                "dnnl_resampling_backward_desc_init",
                dnnl_resampling_backward_desc_init(&op, dnnl_resampling_linear, nil, &diffSrc, &diffDst))
            return try Primitive("resampling backward", op: op, hint: forward)
        }
        let output = try Tensor(desc: primitive.desc(.diffSource))
        try primitive.execute([(Arg.diffDst, try dy.reordered(to: destination)), (Arg.diffSrc, output)])
        return output
    }

    /// The channel slices of `dy` that a concatenation of tensors with `channels` channels produced (the
    /// backward of `concatenate`), as plain tensors.
    static func split(_ dy: Tensor, channels: [Int]) throws -> [Tensor] {
        let plain = try dy.floatTensor()
        let s = plain.shape
        let plane = s[2] * s[3]
        var parts: [Tensor] = []
        var offset = 0
        for c in channels {
            var values = [Float](repeating: 0, count: s[0] * c * plane)
            for n in 0..<s[0] {
                let source = (n * s[1] + offset) * plane
                values.replaceSubrange(
                    (n * c * plane)..<((n + 1) * c * plane),
                    with: plain.values[source..<(source + c * plane)])
            }
            parts.append(try Tensor(plain: [s[0], c, s[2], s[3]], values: values))
            offset += c
        }
        return parts
    }
}

/// Sums gradients that meet at one tensor (nil entries are absent).
func addGradients(_ gradients: [Tensor?]) throws -> Tensor? {
    let present = gradients.compactMap { $0 }
    guard let first = present.first else { return nil }
    return present.count == 1 ? first : try Operations.sum([first] + present.dropFirst())
}
