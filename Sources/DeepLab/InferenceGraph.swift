/// A model's eval-mode computation as a list of operators in ONNX's vocabulary (default domain, opset 17),
/// with its weights as named constants: what an exporter serialises, in whatever library it uses.
///
/// Names are the modules' `state_dict` prefixes (`backbone.layer1.0.conv1`), so a node can be traced back to
/// the parameters it came from. Batch norm is folded into the convolutions, as SliceLab infers.
public struct InferenceGraph: Sendable {
    /// An operator attribute.
    public enum Attribute: Equatable, Sendable {
        case int(Int)
        case ints([Int])
        case float(Float)
        case string(String)
    }

    /// One operator application: `operation` is the ONNX op type (`Conv`, `Relu`, `Resize`, …).
    public struct Node: Sendable {
        public let operation: String
        public let name: String
        public let inputs: [String]
        public let outputs: [String]
        public let attributes: [(name: String, value: Attribute)]
    }

    /// A named constant tensor (a weight, or a small shape or bound).
    public struct Constant: Sendable {
        public enum Values: Sendable {
            case float([Float])
            case int64([Int64])
        }

        public let name: String
        public let shape: [Int]
        public let values: Values
    }

    /// The graph input: Float32 [N, C, H, W].
    public let input: String
    public let inputChannels: Int
    /// Outputs: Float32 logits [N, K, H, W] and Int64 labels [N, H, W] (the argmax over classes).
    public internal(set) var logits = ""
    public internal(set) var labels = ""
    public let classCount: Int
    public private(set) var nodes: [Node] = []
    public private(set) var constants: [Constant] = []

    init(input: String, inputChannels: Int, classCount: Int) {
        self.input = input
        self.inputChannels = inputChannels
        self.classCount = classCount
    }

    /// Appends a node named `name` with one output, also named `name`, and returns that output.
    @discardableResult
    mutating func node(
        _ operation: String, _ name: String, _ inputs: [String],
        _ attributes: [(name: String, value: Attribute)] = []
    ) -> String {
        nodes.append(Node(operation: operation, name: name, inputs: inputs, outputs: [name], attributes: attributes))
        return name
    }

    /// Adds a Float32 constant and returns its name.
    @discardableResult
    mutating func constant(_ name: String, shape: [Int], _ values: [Float]) -> String {
        precondition(shape.reduce(1, *) == values.count, "constant \(name): \(values.count) values for \(shape)")
        constants.append(Constant(name: name, shape: shape, values: .float(values)))
        return name
    }
}

// MARK: - Layers

extension ConvUnit {
    /// Conv (batch norm folded), then the residual Add and the activation, on graph value `x`.
    func describe(_ x: String, residual: String? = nil, in graph: inout InferenceGraph) -> String {
        let name = String(conv.weight.name.dropLast(".weight".count))
        let (weights, bias) = foldedPlainWeights()
        let w = graph.constant(name + ".weight", shape: conv.weight.shape, weights)
        let b = graph.constant(name + ".bias", shape: [conv.outputChannels], bias)
        let k = conv.window.kernel
        let p = conv.window.padding
        let d = conv.window.dilation
        let s = conv.window.stride
        var y = graph.node(
            "Conv", name, [x, w, b],
            [
                ("kernel_shape", .ints([k, k])), ("strides", .ints([s, s])), ("pads", .ints([p, p, p, p])),
                ("dilations", .ints([d, d])), ("group", .int(conv.groups))
            ])
        if let residual { y = graph.node("Add", name + ".add", [y, residual]) }
        switch activation {
        case .none: return y
        case .relu: return graph.node("Relu", name + ".relu", [y])
        case .relu6:
            let low = graph.constant(name + ".clip_min", shape: [], [0])
            let high = graph.constant(name + ".clip_max", shape: [], [6])
            return graph.node("Clip", name + ".relu6", [y, low, high])
        }
    }
}

extension ASPP {
    /// The 1×1 and atrous branches, image pooling (broadcast back with Expand, which is what bilinear
    /// resampling of a 1×1 map computes), concatenation and projection; dropout is the identity in eval mode.
    func describe(_ x: String, in graph: inout InferenceGraph) -> String {
        var outputs = branches.map { describeChain($0, x, in: &graph) }
        let name = String(projection.conv.weight.name.dropLast("project.0.weight".count))
        let pooled = graph.node("GlobalAveragePool", name + "pool", [x])
        let y = pooling.describe(pooled, in: &graph)
        let shape = graph.node("Shape", name + "shape", [outputs[0]])
        outputs.append(graph.node("Expand", name + "expand", [y, shape]))
        let joined = graph.node("Concat", name + "concat", outputs, [("axis", .int(1))])
        return projection.describe(joined, in: &graph)
    }
}

/// The units in order from graph value `x`.
func describeChain(_ units: [ConvUnit], _ x: String, in graph: inout InferenceGraph) -> String {
    units.reduce(x) { $1.describe($0, in: &graph) }
}

extension InferenceGraph {
    /// Bilinear `Resize` attributes: half-pixel centres (PyTorch's `align_corners=False`) or aligned corners.
    static func bilinear(alignCorners: Bool) -> [(name: String, value: Attribute)] {
        [
            ("mode", .string("linear")),
            ("coordinate_transformation_mode", .string(alignCorners ? "align_corners" : "half_pixel"))
        ]
    }

    /// `Resize` of `x` [N, C, h, w] to [N, C] and the spatial size of `like` [_, _, H, W].
    mutating func resize(_ x: String, toSizeOf like: String, name: String, alignCorners: Bool) -> String {
        let batchAndChannels = node("Shape", name + ".leading", [x], [("end", .int(2))])
        let size = node("Shape", name + ".size", [like], [("start", .int(2))])
        let sizes = node("Concat", name + ".sizes", [batchAndChannels, size], [("axis", .int(0))])
        return node("Resize", name, [x, "", "", sizes], Self.bilinear(alignCorners: alignCorners))
    }
}

extension DeepLabHead {
    func describe(_ features: (lowLevel: String, out: String), in graph: inout InferenceGraph) -> String {
        var y = describeChain(refine, aspp.describe(features.out, in: &graph), in: &graph)
        if let fusion {
            let resized = graph.resize(y, toSizeOf: features.lowLevel, name: "decoder.up", alignCorners: true)
            let projected = fusion.projection.describe(features.lowLevel, in: &graph)
            let joined = graph.node("Concat", "decoder.concat", [resized, projected], [("axis", .int(1))])
            y = describeChain(fusion.fuse, joined, in: &graph)
        }
        return classifier.describe(y, in: &graph)
    }
}

// MARK: - The model

extension DeepLabV3 {
    /// The eval-mode model as a graph from input `image` [N, C, H, W] to `logits` [N, K, H, W] (bilinear,
    /// half-pixel centres as PyTorch's `align_corners=False`, aligned corners for DeepLabV3+) and `labels`
    /// [N, H, W]; N, H and W stay free. The auxiliary head, which inference does not use, is left out.
    public func inferenceGraph() -> InferenceGraph {
        var graph = InferenceGraph(
            input: "image", inputChannels: configuration.inputChannels,
            classCount: configuration.classCount)
        var x = graph.input
        if configuration.inputScale > 1 {
            let s = Float(configuration.inputScale)
            let scales = graph.constant("input_scale.scales", shape: [4], [1, 1, s, s])
            x = graph.node("Resize", "input_scale", [x, "", scales], InferenceGraph.bilinear(alignCorners: false))
        }
        let head = self.head.describe(backbone.describe(x, in: &graph), in: &graph)
        graph.logits = graph.resize(
            head, toSizeOf: graph.input, name: "logits", alignCorners: configuration.decoder == .v3plus)
        graph.labels = graph.node("ArgMax", "labels", [graph.logits], [("axis", .int(1)), ("keepdims", .int(0))])
        return graph
    }
}
