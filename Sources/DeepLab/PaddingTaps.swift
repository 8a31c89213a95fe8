import COneDNN

/// An interval of output positions along one spatial axis of a 3×3 convolution dilated by `rate` (padding
/// `rate`, stride 1) within which the same kernel taps read inside the input. The others read only zero
/// padding, so they add nothing and can be skipped: at ASPP's rates (12, 24, 36 at output stride 8) on a
/// 64×64 feature map, more than a third of the multiply-adds fall in the padding.
struct TapInterval: Hashable {
    /// Output positions (the same as input positions: the convolution keeps the extent).
    let outputs: Range<Int>
    /// Kernel indices (0…2) that read inside the input for every output position of the interval.
    let taps: ClosedRange<Int>

    /// The input positions the interval's taps read.
    func inputs(rate: Int) -> Range<Int> {
        (outputs.lowerBound + (taps.lowerBound - 1) * rate)..<(outputs.upperBound + (taps.upperBound - 1) * rate)
    }

    /// The intervals covering `0..<extent`: tap 0 reads inside from `rate` on, tap 2 up to `extent − rate`, so
    /// those two points cut the axis into at most three intervals.
    static func intervals(extent: Int, rate: Int) -> [TapInterval] {
        let cuts = Set([0, rate, extent - rate, extent].map { min(max($0, 0), extent) }).sorted()
        return zip(cuts, cuts.dropFirst()).map { low, high in
            let first = low - rate >= 0 ? 0 : 1
            let last = high - 1 + rate <= extent - 1 ? 2 : 1
            return TapInterval(outputs: low..<high, taps: first...last)
        }
    }

    /// Multiply-adds along this axis relative to all three taps everywhere.
    static func workFraction(_ intervals: [TapInterval]) -> Double {
        let total = intervals.reduce(0) { $0 + $1.outputs.count * 3 }
        return Double(intervals.reduce(0) { $0 + $1.outputs.count * $1.taps.count }) / Double(max(total, 1))
    }
}

extension ConvUnit {
    /// The rectangles to compute separately when this unit is a dilated 3×3 convolution on an input of dims `s`
    /// whose padding taps are at least a tenth of the work; nil otherwise.
    func paddingFreePlan(_ s: [Int]) -> (rows: [TapInterval], columns: [TapInterval])? {
        let w = conv.window
        guard skipsPaddingTaps, conv.groups == 1, w.kernel == 3, w.stride == 1, w.dilation > 1,
              w.padding == w.dilation else { return nil }
        let rows = TapInterval.intervals(extent: s[2], rate: w.dilation)
        let columns = TapInterval.intervals(extent: s[3], rate: w.dilation)
        guard TapInterval.workFraction(rows) * TapInterval.workFraction(columns) <= 0.9 else { return nil }
        return (rows, columns)
    }

    /// Eval-mode forward of a dilated 3×3 convolution as one convolution per rectangle of `plan`, each with only
    /// the taps that read inside the input (a 1×1 to 3×3 kernel, the same dilation, no padding) and the unit's
    /// folded batch norm and fused activation. The whole input and output stay in the layout the rectangles'
    /// direct kernels use (blocked by channels), so each rectangle's input and output is a strided copy of a
    /// view, not a change of layout. (The whole padded convolution, whose layouts these used to be, falls back to
    /// a plain-layout GEMM at ASPP's rates.)
    ///
    /// Rests on `dnnl_dilated_convolution_forward_desc_init` and submemory reorders.
    func paddingFreeForward(_ x: Tensor, plan: (rows: [TapInterval], columns: [TapInterval])) throws -> Tensor {
        let s = x.shape
        let rate = conv.window.dilation
        // Folding batch norm is needed only when a rectangle's weights are not cached yet.
        lazy var folded = foldedPlainWeights()
        let biasKey = PrimitiveCache.Key("bias")
        let biasTensor: Tensor
        if let cached = zoneWeightCache[biasKey], cached.version == parameterVersion {
            biasTensor = cached.weights
        } else {
            biasTensor = try Tensor(plain: [conv.outputChannels], values: folded.bias)
            zoneWeightCache[biasKey] = (parameterVersion, biasTensor)
        }
        func rectangle(_ r: TapInterval, _ c: TapInterval) throws -> Primitive {
            try zonePrimitives.primitive(PrimitiveCache.Key(s, r, c)) {
                let inRows = r.inputs(rate: rate), inColumns = c.inputs(rate: rate)
                var src = try MemoryDesc.make([s[0], s[1], inRows.count, inColumns.count], dnnl_format_tag_any)
                var weights = try MemoryDesc.make([conv.outputChannels, conv.inputChannels, r.taps.count,
                                                   c.taps.count], dnnl_format_tag_any)
                var biasDesc = try MemoryDesc.make([conv.outputChannels], dnnl_a)
                var dst = try MemoryDesc.make([s[0], conv.outputChannels, r.outputs.count, c.outputs.count],
                                              dnnl_format_tag_any)
                var op = dnnl_convolution_desc_t()
                let ones: [Int64] = [1, 1], dilation: [Int64] = [Int64(rate - 1), Int64(rate - 1)], zero: [Int64] = [0, 0]
                try dnnlCheck("dnnl_dilated_convolution_forward_desc_init", dnnl_dilated_convolution_forward_desc_init(
                    &op, dnnl_forward_inference, dnnl_convolution_direct, &src, &weights, &biasDesc, &dst,
                    ones, dilation, zero, zero))
                return try Primitive("convolution", op: op,
                                     attributes: PrimitiveAttributes(postOps: activation.postOp.map { [$0] } ?? []))
            }
        }
        // The layout of the largest rectangle (all taps) for the whole tensors.
        func widest(_ intervals: [TapInterval]) -> TapInterval { intervals.max { $0.taps.count < $1.taps.count }! }
        let tag = MemoryDesc.formatTag(of: try rectangle(widest(plan.rows), widest(plan.columns))
            .desc(dnnl_query_src_md))
        let input = try x.reordered(to: MemoryDesc.make(s, tag))
        let output = try Tensor(desc: MemoryDesc.make([s[0], conv.outputChannels, s[2], s[3]], tag))
        for r in plan.rows {
            for c in plan.columns {
                let primitive = try rectangle(r, c)
                let kernel = [conv.outputChannels, conv.inputChannels, r.taps.count, c.taps.count]
                let weights = try zoneWeights({ folded.weights }, rows: r.taps, columns: c.taps, dims: kernel,
                                              desc: primitive.desc(dnnl_query_weights_md))
                let zoneInput = try input.spatialView(rows: r.inputs(rate: rate), columns: c.inputs(rate: rate))
                    .reordered(to: primitive.desc(dnnl_query_src_md))
                let zoneOutput = try Tensor(desc: primitive.desc(dnnl_query_dst_md))
                try primitive.execute([(Arg.src, zoneInput), (Arg.weights, weights), (Arg.bias, biasTensor),
                                       (Arg.dst, zoneOutput)])
                try zoneOutput.reorder(into: output.spatialView(rows: r.outputs, columns: c.outputs))
            }
        }
        return output
    }

    /// The sub-kernel `rows` × `columns` of the folded [O, I, 3, 3] weights in `desc`'s layout, cached until
    /// the parameters change (`foldedWeights` is called only on a miss).
    private func zoneWeights(_ foldedWeights: () -> [Float], rows: ClosedRange<Int>, columns: ClosedRange<Int>, dims: [Int],
                             desc: MemoryDesc) throws -> Tensor {
        let key = PrimitiveCache.Key(rows, columns, desc.cacheKey)
        if let cached = zoneWeightCache[key], cached.version == parameterVersion { return cached.weights }
        let plain = foldedWeights()
        var values = [Float]()
        values.reserveCapacity(dims.reduce(1, *))
        for filter in 0..<(conv.outputChannels * conv.inputChannels) {
            for i in rows { for j in columns { values.append(plain[filter * 9 + i * 3 + j]) } }
        }
        let weights = try Tensor(plain: dims, values: values).reordered(to: desc)
        zoneWeightCache[key] = (parameterVersion, weights)
        return weights
    }
}
