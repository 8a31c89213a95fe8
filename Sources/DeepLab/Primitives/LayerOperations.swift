import COneDNN

// Operation descriptors of the layers that own weights, convolution and batch normalisation: the layers build
// their primitives from these (`Primitive(_:op:attributes:hint:)`) without naming oneDNN.

/// A oneDNN convolution operation descriptor.
typealias ConvolutionDescriptor = dnnl_convolution_desc_t

/// Strides, dilations (oneDNN counts from 0), leading and trailing paddings of a convolution.
struct ConvolutionGeometry {
    var strides: [Int64]
    var dilation: [Int64]
    var left: [Int64]
    var right: [Int64]
}

/// oneDNN convolution operation descriptors from source, weights and destination dims (layouts left to oneDNN)
/// and a geometry: the whole convolutions' and the padding-free rectangles' alike. With `bf16`, the source,
/// weights and output gradient are that execution's operand type (bf16 natively, `Bf16Operations`); outputs
/// (unless `bf16Output`), bias and the gradients computed stay f32.
enum ConvolutionOp {
    /// Rests on `dnnl_dilated_convolution_forward_desc_init`.
    static func forward(
        source: [Int], weights: [Int], destination: [Int], bias: Bool, training: Bool,
        _ g: ConvolutionGeometry, bf16: Bf16Execution? = nil, bf16Output: Bool = false
    ) throws -> ConvolutionDescriptor {
        let operand = bf16?.operandType ?? dnnl_f32
        var src = try MemoryDesc.make(source, dnnl_format_tag_any, operand)
        var weightsDesc = try MemoryDesc.make(weights, dnnl_format_tag_any, operand)
        var biasDesc = try MemoryDesc.make([destination[1]], dnnl_a)
        var dst = try MemoryDesc.make(destination, dnnl_format_tag_any, bf16Output ? operand : dnnl_f32)
        var op = ConvolutionDescriptor()
        let status = withUnsafePointer(to: &biasDesc) { biasPointer in
            dnnl_dilated_convolution_forward_desc_init(
                &op, training ? dnnl_forward_training : dnnl_forward_inference, dnnl_convolution_direct,
                &src, &weightsDesc, bias ? biasPointer : nil, &dst, g.strides, g.dilation, g.left, g.right)
        }
        try dnnlCheck("dnnl_dilated_convolution_forward_desc_init", status)
        return op
    }

    /// `groups` independent 1 × 1 convolutions of `inputs` to `outputs` channels on `width` pixels (one row), in
    /// inference: one matrix product per group, [width, inputs] by [inputs, outputs], with the source and
    /// destination in `layout` and the weights' layout `weights`, or left to oneDNN. Rests on
    /// `dnnl_dilated_convolution_forward_desc_init`.
    static func groupedPointwise(
        groups: Int, inputs: Int, outputs: Int, width: Int, layout: FormatTag, weights weightsLayout: MemoryDesc? = nil
    ) throws -> ConvolutionDescriptor {
        var src = try MemoryDesc.make([1, groups * inputs, 1, width], layout)
        var weights = try weightsLayout ?? MemoryDesc.make([groups, outputs, inputs, 1, 1], dnnl_format_tag_any)
        var dst = try MemoryDesc.make([1, groups * outputs, 1, width], layout)
        var op = ConvolutionDescriptor()
        try dnnlCheck(
            "dnnl_dilated_convolution_forward_desc_init",
            dnnl_dilated_convolution_forward_desc_init(
                &op, dnnl_forward_inference, dnnl_convolution_direct, &src, &weights, nil, &dst, [1, 1], [0, 0],
                [0, 0], [0, 0]))
        return op
    }

    /// Rests on `dnnl_dilated_convolution_backward_weights_desc_init`.
    static func backwardWeights(
        source: [Int], weights: [Int], destination: [Int], bias: Bool,
        _ g: ConvolutionGeometry,
        bf16: Bf16Execution? = nil
    ) throws -> ConvolutionDescriptor {
        let operand = bf16?.operandType ?? dnnl_f32
        var src = try MemoryDesc.make(source, dnnl_format_tag_any, operand)
        var diffWeights = try MemoryDesc.make(weights, dnnl_format_tag_any)
        var diffBias = try MemoryDesc.make([destination[1]], dnnl_a)
        var diffDst = try MemoryDesc.make(destination, dnnl_format_tag_any, operand)
        var op = ConvolutionDescriptor()
        let status = withUnsafePointer(to: &diffBias) { biasPointer in
            dnnl_dilated_convolution_backward_weights_desc_init(
                &op, dnnl_convolution_direct, &src, &diffWeights, bias ? biasPointer : nil, &diffDst, g.strides,
                g.dilation, g.left, g.right)
        }
        try dnnlCheck("dnnl_dilated_convolution_backward_weights_desc_init", status)
        return op
    }

    /// Rests on `dnnl_dilated_convolution_backward_data_desc_init`.
    static func backwardData(
        source: [Int], weights: [Int], destination: [Int],
        _ g: ConvolutionGeometry, bf16: Bf16Execution? = nil
    ) throws -> ConvolutionDescriptor {
        let operand = bf16?.operandType ?? dnnl_f32
        var diffSrc = try MemoryDesc.make(source, dnnl_format_tag_any)
        var weightsDesc = try MemoryDesc.make(weights, dnnl_format_tag_any, operand)
        var diffDst = try MemoryDesc.make(destination, dnnl_format_tag_any, operand)
        var op = ConvolutionDescriptor()
        try dnnlCheck(
            "dnnl_dilated_convolution_backward_data_desc_init",
            dnnl_dilated_convolution_backward_data_desc_init(
                &op, dnnl_convolution_direct, &diffSrc, &weightsDesc, &diffDst, g.strides, g.dilation,
                g.left, g.right))
        return op
    }
}

/// oneDNN batch-normalisation operation descriptors (batch statistics, with scale and shift) on data of one
/// layout.
enum BatchNormalizationOp {
    /// The training forward, which also outputs the batch's mean and variance (destinations 1 and 2).
    /// Rests on `dnnl_batch_normalization_forward_desc_init`.
    static func trainingForward(_ data: MemoryDesc, epsilon: Float) throws -> dnnl_batch_normalization_desc_t {
        var data = data
        var op = dnnl_batch_normalization_desc_t()
        try dnnlCheck(
            "dnnl_batch_normalization_forward_desc_init",
            dnnl_batch_normalization_forward_desc_init(
                &op, dnnl_forward_training, &data, epsilon, dnnl_use_scale.rawValue | dnnl_use_shift.rawValue))
        return op
    }

    /// The backward of `trainingForward`: the data's, scale's and shift's gradients.
    /// Rests on `dnnl_batch_normalization_backward_desc_init`.
    static func backward(_ data: MemoryDesc, epsilon: Float) throws -> dnnl_batch_normalization_desc_t {
        var data = data
        var op = dnnl_batch_normalization_desc_t()
        try dnnlCheck(
            "dnnl_batch_normalization_backward_desc_init",
            dnnl_batch_normalization_backward_desc_init(
                &op, dnnl_backward, &data, &data, epsilon, dnnl_use_scale.rawValue | dnnl_use_shift.rawValue))
        return op
    }
}
