import CFusedBlocks
import Foundation
import SliceLabSupport

/// An `InvertedResidual` block computed in one pass in eval mode (float32), by `CFusedBlocks`: expansion, depthwise,
/// projection and the identity one output row at a time, the expanded rows kept in a ring in the cache instead of
/// going to memory as an expanded tensor (6 × the block's input, read back twice by the unfused units). The same
/// sums as the three units, up to their order (float32 rounding); `FusedInvertedResidualTests` hold it to them.
///
/// Used where the effective ISA's `ConvolutionStrategyTable` entry says so (`fusedInvertedResiduals`), on the
/// kernels of that ISA (`isa`).
final class FusedInvertedResidual {
    private var weights: FusedKernels.Weights?
    /// The kernels it runs on.
    let isa: cfused_isa

    /// Whether every block that `fits` is fused, not only those where it `pays` (tests).
    let always: Bool

    /// Fusion on `isa`'s kernels (by default the effective ISA's), or nil where there are none.
    init?(isa: cfused_isa? = FusedInvertedResidual.effectiveISA, always: Bool = false) {
        guard let isa else { return nil }
        (self.isa, self.always) = (isa, always)
    }

    /// Whether this fusion computes `block`'s eval-mode forward on input dims `inputShape`.
    func takes(_ block: some FusableChain, inputShape: [Int]) -> Bool {
        Self.fits(block, inputShape: inputShape) && (always || block.fusionPays(inputShape: inputShape))
    }

    /// The kernels for oneDNN ISA `name`: AVX-512 for its AVX-512 levels, AVX2 for AVX2 and AVX2-VNNI, none below
    /// (or when this CPU lacks them, as in a process capped above its CPU).
    static func isa(forOneDNN name: String) -> cfused_isa? {
        let supported = cfused_supported()
        return FusedKernels.instructionSet(forOneDNN: name, avx512: cfused_avx512, avx2: cfused_avx2) {
            supported & (1 << $0.rawValue) != 0
        }
    }

    /// The kernels of this process's effective ISA.
    static let effectiveISA = isa(forOneDNN: oneDNNEffectiveISA)

    /// The environment variable that overrides the table for measuring (`Benchmarks/bench_fused_blocks.py`): `0`
    /// runs every block unit by unit, `1` fuses those that fit on any ISA with kernels (AVX2's entry leaves them off).
    public static let variable = "SLICELAB_FUSED_BLOCKS"

    /// Whether blocks of this process fuse by default: the effective ISA's table entry, or `variable`.
    static let enabledInThisProcess = FusedKernels.measuringSwitch(
        variable, else: ConvolutionStrategyTable.effective.fusedInvertedResiduals)

    /// Whether `block`'s eval-mode forward can be fused: float32 (no int8 unit, no quantised entry; bf16 units only
    /// where the fused pass `outrunsBf16` on `inputShape`), no calibration observing its units, a depthwise
    /// convolution the kernel computes (`FusedKernels.fitsDepthwise`), 1 × 1 expansion and projection, a linear
    /// projection where the identity is added.
    static func fits(_ block: some FusableChain, inputShape: [Int]? = nil) -> Bool {
        guard block.entryQuantization == nil, (2...3).contains(block.units.count),
            block.units.allSatisfy({ $0.quantization == nil && $0.inputObserver == nil }),
            block.units.allSatisfy({ $0.bf16 == nil }) || inputShape.map({ outrunsBf16(block, inputShape: $0) }) == true
        else { return false }
        return FusedKernels.fitsChain(block.units, residual: block.usesResidual)
    }

    /// Whether the fused float32 pass beats the block's units in bf16 on input dims `inputShape`: where its expanded
    /// tensor in float32 outgrows `bf16ExpandedBytes`, so that the units, even at half the bytes, stream it through
    /// memory, which the fused pass never does. On the AMX Xeon (`segment --timings`, the bundled model in bf16
    /// against float32) the blocks whose expanded tensors took 5.9–17.6 MB ran 0.74–0.81 × their bf16 time fused,
    /// those of 2.3 MB and less 1.1–3 × (bf16 won); Benchmarks/README.md.
    static func outrunsBf16(_ block: some FusableChain, inputShape: [Int]) -> Bool {
        let hidden = block.units[block.units.count - 2].conv.inputChannels
        return inputShape.count == 4
            && inputShape[0] * hidden * inputShape[2] * inputShape[3] * MemoryLayout<Float>.size > bf16ExpandedBytes
    }

    /// See `outrunsBf16`: twice the 2 MiB L2 of a core of the AMX Xeon, between the sizes measured either way.
    static let bf16ExpandedBytes = 4 << 20

    /// Multiply-adds per byte the three units move unfused (float32; the block's input and output, the expanded
    /// tensor written and read, the depthwise output written and read), per output pixel.
    static func unfusedIntensity(_ block: some FusableChain) -> Double {
        let depthwise = block.units[block.units.count - 2].conv
        let s2 = Double(depthwise.window.stride * depthwise.window.stride)
        let input = Double(block.units[0].conv.inputChannels)
        let hidden = Double(depthwise.inputChannels)
        let output = Double(block.units[block.units.count - 1].conv.outputChannels)
        let expands = block.units.count == 3
        let multiplyAdds = (expands ? input * hidden * s2 : 0) + 9 * hidden + hidden * output
        let values = input * s2 + (expands ? 2 * hidden * s2 : 0) + 2 * hidden + output
        return multiplyAdds / (4 * values)
    }

    /// Blocks more compute-bound than this run unfused. On the AMX Xeon (`AVX512_CORE_AMX`,
    /// `Benchmarks/bench_fused_blocks.py`, four runs) the bundled model's blocks up to 5.8 multiply-adds a byte ran
    /// 0.45–1.0 × their unfused time in every run (block 2, at 2.2: 0.45–0.52 ×); those at 7.9–11.6 between 0.71 and
    /// 1.22 × from run to run, those at 15–19 1.04–1.05 ×, the last (27) slower still, and the first unfused block
    /// after a fused one took up to a quarter longer: there oneDNN's 1 × 1 kernels run as near the peak as ours.
    static let maximumIntensity = 6.0

    /// `block` on `x` (any layout), into a channels-last tensor; counted and profiled as its units would be, the
    /// whole block's costs on its first unit under the block's name (strategy `block.fusedStrategy`).
    func callAsFunction(_ block: some FusableChain, _ x: Tensor) throws -> Tensor {
        try FusedKernels.counted(block.units, inputShape: x.shape, x, name: block.name, strategy: block.fusedStrategy) {
            try FusedKernels.run(
                Self.description(block, inputShape: x.shape), x, weights: weights(for: block), isa: isa,
                name: "fused block \(block.name)")
        }
    }

    /// The kernels' description of `block` on input dims `inputShape` (its pointers set by `FusedKernels.run`; an
    /// int8 block's activations are in its requantisation instead).
    static func description(_ block: some FusableChain, inputShape: [Int]) -> cfused_block {
        var description = FusedKernels.description(block.units[block.units.count - 2], inputShape: inputShape)
        description.out_channels = Int32(block.units[block.units.count - 1].conv.outputChannels)
        description.expands = block.units.count == 3 ? 1 : 0
        description.residual = block.usesResidual ? 1 : 0
        description.expand_activation = FusedKernels.activation(block.units[0].activation)
        description.project_activation = FusedKernels.activation(block.units[block.units.count - 1].activation)
        return description
    }

    /// The block's folded weights in the kernels' layout, made once per parameter version.
    func weights(for block: some FusableChain) -> FusedKernels.Weights {
        let version = block.units.reduce(0) { $0 &+ $1.parameterVersion }
        if let weights, weights.version == version, weights.isa == isa { return weights }
        let depthwise = block.units[block.units.count - 2]
        let project = block.units[block.units.count - 1]
        let expand =
            block.units.count == 3 ? FusedKernels.pointwiseWeights(block.units[0], isa: isa) : (weights: [], bias: [])
        let (taps, tapsBias) = FusedKernels.depthwiseTaps(depthwise, isa: isa)
        let projection = FusedKernels.pointwiseWeights(project, isa: isa)
        let weights = FusedKernels.Weights(
            version: version, isa: isa,
            arrays: [expand.weights, expand.bias, taps, tapsBias, projection.weights, projection.bias])
        self.weights = weights
        return weights
    }
}

/// Units the fused kernels compute in one pass: an optional 1 × 1 expansion, a depthwise 3 × 3, a 1 × 1 projection
/// and the identity where `usesResidual` (an `InvertedResidual`), or the depthwise and pointwise halves of a
/// separable convolution (`SeparableConvolution`).
protocol FusableChain {
    var units: [ConvUnit] { get }
    var usesResidual: Bool { get }
    /// The name `--timings` shows the fused pass under.
    var name: String { get }
    /// The int8 quantisation of the chain's input, which rules fusion out (nil for float32).
    var entryQuantization: UnitQuantization? { get }
    /// The strategy `--timings` names the fused pass by.
    var fusedStrategy: String { get }
    /// Whether the fused pass beats the units on input dims `inputShape` (by the rule measured for such chains).
    func fusionPays(inputShape: [Int]) -> Bool
}

extension InvertedResidual: FusableChain {
    var fusedStrategy: String { "fused-block" }

    /// Memory-bound unfused: `FusedInvertedResidual.unfusedIntensity` at most `maximumIntensity`.
    func fusionPays(inputShape: [Int]) -> Bool {
        FusedInvertedResidual.unfusedIntensity(self) <= FusedInvertedResidual.maximumIntensity
    }
}

/// smp's `SeparableConv2d` with its batch norm and ReLU (`separableConvolution`): the depthwise and the pointwise
/// unit, whose output only the pointwise reads.
struct SeparableConvolution: FusableChain {
    let units: [ConvUnit]
    var usesResidual: Bool { false }
    /// The separable convolution's `state_dict` prefix (`decoder.aspp.0.convs.1.0`).
    var name: String { String(units[0].name.dropLast(".0".count)) }
    var entryQuantization: UnitQuantization? { nil }
    var fusedStrategy: String { "fused-separable" }

    /// Where the effective ISA's table fuses every separable convolution (`separablesFusedAtEveryRate`), else where
    /// the depthwise half is dilated with at most `OwnDepthwiseConvolution.maximumInsideShare` of its taps reading
    /// the input (where the depthwise half alone would take `OwnDepthwiseConvolution`). Measured on the Xeon with
    /// AVX-512 VNNI (the bundled model's ASPP on 1280 × 30 × 25, 3 alternated runs of 40 forwards): rates 12 and 18
    /// fused took 0.87 × the two units' time (6 of 6 pairs faster); rate 6 (oneDNN's `jit_dw`, 0.73 of the taps
    /// inside) and the undilated decoder convolution went either way.
    func fusionPays(inputShape: [Int]) -> Bool {
        ConvolutionStrategyTable.effective.separablesFusedAtEveryRate
            || units[0].conv.window.dilation > 1
                && units[0].insideShare(inputShape: inputShape) <= OwnDepthwiseConvolution.maximumInsideShare
    }
}

/// What `FusedInvertedResidual` and `OwnDepthwiseConvolution` share: the description of a convolution for
/// `CFusedBlocks`, its weights in the kernels' layout, and the run over the compute threads; with
/// `WinogradConvolution`, the measuring switches and the choice of our kernels' instruction set.
enum FusedKernels {
    /// Our kernels' instruction set where oneDNN runs ISA `name`: `avx512`'s for its AVX-512 levels, `avx2`'s for
    /// AVX2 and up, when this CPU runs them (`runs`); nil below AVX2 (or in a process capped above its CPU).
    static func instructionSet<ISA>(forOneDNN name: String, avx512: ISA, avx2: ISA, runs: (ISA) -> Bool) -> ISA? {
        if name.hasPrefix("AVX512"), runs(avx512) { return avx512 }
        if name.hasPrefix("AVX512") || name.hasPrefix("AVX2"), runs(avx2) { return avx2 }
        return nil
    }

    /// The folded, packed weights of one block or unit, with the parameter version and kernels they were made
    /// for; the arrays are kept in buffers of their own so the kernels' description can point at them.
    final class Weights {
        let version: Int
        let isa: cfused_isa
        /// A block's expansion, its bias, depthwise taps, their bias, projection, its bias (see `cfused_block`), or a
        /// stem's taps and bias (`cfused_stem`); nil for an empty array (what the description leaves out).
        let buffers: [UnsafeMutableBufferPointer<Float>?]

        init(version: Int, isa: cfused_isa, arrays: [[Float]]) {
            self.version = version
            self.isa = isa
            buffers = arrays.map { array in
                guard !array.isEmpty else { return nil }
                let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: array.count)
                _ = buffer.initialize(from: array)
                return buffer
            }
        }

        deinit { buffers.forEach { $0?.deallocate() } }

        /// The array's first element, nil for an empty array.
        func pointer(_ index: Int) -> UnsafePointer<Float>? { buffers[index].map { UnsafePointer($0.baseAddress!) } }
    }

    /// `body`'s output, counted and profiled as `units` one after the other on input dims `inputShape` would be (`x`
    /// the input read): the whole cost on the first unit, under `name` and `strategy`.
    static func counted(
        _ units: [ConvUnit], inputShape: [Int], _ x: Tensor, name: String, strategy: String,
        _ body: () throws -> Tensor
    ) throws -> Tensor {
        var shapes = [inputShape]
        for unit in units.dropLast() { shapes.append(unit.conv.outputDims(shapes[shapes.count - 1])) }
        let work = zip(units, shapes).reduce(0) { $0 + $1.0.countForward(inputShape: $1.1) }
        guard LayerProfiling.enabled else { return try body() }
        let inside = zip(units, shapes).reduce(0) { $0 + $1.0.multiplyAddsInside(inputShape: $1.1) }
        let (y, seconds, collected) = try LayerProfiling.measure { try body() }
        units[0].record(
            name: name, strategy: strategy, seconds: seconds, collected: collected, multiplyAdds: work, inside: inside,
            bytes: max(collected.bytes, x.desc.byteCount + y.desc.byteCount))
        return y
    }

    /// A measuring switch: `variable` set to `0` or `1` in the environment, else `value` (the table's).
    static func measuringSwitch(_ variable: String, else value: Bool) -> Bool {
        switch ProcessInfo.processInfo.environment[variable] {
        case "0": return false
        case "1": return true
        default: return value
        }
    }

    /// cfused_activation of `activation`.
    static func activation(_ activation: Activation) -> Int32 {
        Int32((activation == .relu6 ? cfused_relu6 : activation == .relu ? cfused_relu : cfused_identity).rawValue)
    }

    /// Whether the kernels compute the chain `units` (1 × 1 expansions, a depthwise convolution, a 1 × 1 projection)
    /// and, where `residual`, the identity: a depthwise convolution they compute (`fitsDepthwise`), 1 × 1s at
    /// stride 1 without padding, a linear projection at stride 1 where the identity is added.
    static func fitsChain(_ units: [ConvUnit], residual: Bool) -> Bool {
        let depthwise = units[units.count - 2].conv
        let project = units[units.count - 1]
        let pointwise = { (unit: ConvUnit) in
            unit.conv.window.kernel == 1 && unit.conv.window.stride == 1 && unit.conv.window.padding == 0
                && unit.conv.groups == 1
        }
        return fitsDepthwise(depthwise) && pointwise(project) && units.dropLast(2).allSatisfy(pointwise)
            && (!residual || (depthwise.window.stride == 1 && project.activation == .none))
    }

    /// Whether `conv` is a depthwise 3 × 3 convolution the kernel computes: stride 1 or 2, padding equal to the
    /// dilation, dilation up to `CFUSED_MAX_DILATION`.
    static func fitsDepthwise(_ conv: Conv2d) -> Bool {
        let w = conv.window
        return conv.groups == conv.inputChannels && conv.outputChannels == conv.inputChannels && w.kernel == 3
            && w.padding == w.dilation && w.dilation <= Int(CFUSED_MAX_DILATION) && (1...2).contains(w.stride)
    }

    /// A description with `depthwise`'s geometry on `inputShape`: no expansion, no projection, no identity (the
    /// caller adds what its block has).
    static func description(_ depthwise: ConvUnit, inputShape s: [Int]) -> cfused_block {
        let out = depthwise.conv.outputDims(s)
        var description = cfused_block()
        description.batch = Int32(s[0])
        description.height = Int32(s[2])
        description.width = Int32(s[3])
        description.out_height = Int32(out[2])
        description.out_width = Int32(out[3])
        description.in_channels = Int32(s[1])
        description.hidden = Int32(depthwise.conv.inputChannels)
        description.out_channels = Int32(depthwise.conv.outputChannels)
        description.stride = Int32(depthwise.conv.window.stride)
        description.dilation = Int32(depthwise.conv.window.dilation)
        description.depthwise_activation = activation(depthwise.activation)
        return description
    }

    /// A 1 × 1 unit's folded [O, I] weights as the kernels' packed [I][O], and its bias padded with zeros.
    static func pointwiseWeights(_ unit: ConvUnit, isa: cfused_isa) -> (weights: [Float], bias: [Float]) {
        let (w, bias) = unit.foldedPlainWeights()
        let o = unit.conv.outputChannels
        let i = unit.conv.inputChannels
        var transposed = [Float](repeating: 0, count: o * i)
        for a in 0..<o { for b in 0..<i { transposed[b * o + a] = w[a * i + b] } }
        var packed = [Float](repeating: 0, count: cfused_packed_count(Int32(i), Int32(o), isa))
        cfused_pack(transposed, Int32(i), Int32(o), isa, &packed)
        return (packed, padded(bias, isa: isa))
    }

    /// A depthwise 3 × 3 unit's folded taps as [9][padded channels] and its bias, padded with zeros.
    static func depthwiseTaps(_ unit: ConvUnit, isa: cfused_isa) -> (taps: [Float], bias: [Float]) {
        let channels = unit.conv.inputChannels
        let stride = Int(cfused_padded(Int32(channels), isa))
        let (weights, bias) = unit.foldedPlainWeights()
        var taps = [Float](repeating: 0, count: 9 * stride)
        for c in 0..<channels { for t in 0..<9 { taps[t * stride + c] = weights[c * 9 + t] } }
        return (taps, padded(bias, isa: isa))
    }

    /// `values` with zeros to a whole number of `isa`'s vectors.
    private static func padded(_ values: [Float], isa: cfused_isa) -> [Float] {
        values + [Float](repeating: 0, count: Int(cfused_padded(Int32(values.count), isa)) - values.count)
    }

    /// Runs `description` (its pointers set here) on `x` (any layout) with `weights` (expansion, its bias, taps,
    /// their bias, projection, its bias; empty arrays for what the description leaves out) into a channels-last
    /// tensor; with `stem` (its `source` set here), `x` is the stem's source, not the block's input; with `int8` (its
    /// `input` and `output` set here), an int8 block from `x` in the input type into the output type (f32 when nil).
    /// Each worker takes contiguous rows of an image (all their residues), so the next layer, which oneDNN splits the
    /// same way, reads rows its own core wrote; a chunk expands the rows beyond its ends again (2d rows per inner
    /// boundary).
    static func run(
        _ description: cfused_block, _ x: Tensor, weights: Weights, isa: cfused_isa, name: String,
        stem: cfused_stem? = nil, int8: (cfused_int8, input: QuantizedType, output: QuantizedType?)? = nil
    ) throws -> Tensor {
        var description = description
        let s = x.shape
        let outputDims = [s[0], Int(description.out_channels), Int(description.out_height), Int(description.out_width)]
        let input = try x.reordered(to: Int8Operations.channelsLast(s, int8?.input))
        let output = try Tensor(desc: Int8Operations.channelsLast(outputDims, int8?.output))
        description.expand_weights = weights.pointer(0)
        description.expand_bias = weights.pointer(1)
        description.depthwise_weights = weights.pointer(2)
        description.depthwise_bias = weights.pointer(3)
        description.project_weights = weights.pointer(4)
        description.project_bias = weights.pointer(5)
        var geometry = stem ?? cfused_stem()
        var quantized = int8?.0 ?? cfused_int8()
        let workers = computeThreads()
        let chunks = max(1, min(outputDims[2], (workers + s[0] - 1) / s[0]))
        let failed = Locked<String?>(nil)
        input.withStorage { source in
            output.withStorage { destination in
                geometry.source = UnsafePointer(source.baseAddress)
                description.input = stem == nil && int8 == nil ? UnsafePointer(source.baseAddress) : nil
                description.output = int8 == nil ? destination.baseAddress : nil
                quantized.input = UnsafeRawPointer(source.baseAddress)
                quantized.output = UnsafeMutableRawPointer(destination.baseAddress)
                withUnsafePointer(to: &geometry) { geometry in
                    withUnsafePointer(to: &quantized) { quantized in
                        description.stem = stem == nil ? nil : geometry
                        description.int8 = int8 == nil ? nil : quantized
                        // Only now: what the kernels compute, and so the residues and the workspace, depends on
                        // which weights, stem and int8 description are set.
                        let residues = Int(cfused_residues(&description))
                        let bytes = max(cfused_workspace_count(&description, isa), 1) * MemoryLayout<Float>.size
                        let tasks = s[0] * chunks
                        let rows = { outputDims[2] * $0 / chunks }
                        withExtendedLifetime(weights) {
                            parallelWorkers { worker, count in
                                guard worker < tasks else { return }
                                guard let workspace = TensorMemory.shared.allocate(bytes) else {
                                    return failed.withLock { $0 = "out of memory (\(bytes) bytes of workspace)" }
                                }
                                defer { TensorMemory.shared.release(workspace, bytes: bytes) }
                                // Cleared once: the calls keep its padding zero (see cfused_workspace_count). Debug
                                // builds (the tests) fill it with NaN first, so that a value read before it is written
                                // shows in the output.
                                #if DEBUG
                                    workspace.initializeMemory(
                                        as: Float.self, repeating: .nan, count: bytes / MemoryLayout<Float>.size)
                                #endif
                                cfused_clear_workspace(&description, isa, workspace.assumingMemoryBound(to: Float.self))
                                for task in stride(from: worker, to: tasks, by: count) {
                                    var block = description
                                    let (image, chunk) = task.quotientAndRemainder(dividingBy: chunks)
                                    for residue in 0..<residues {
                                        let status = cfused_run(
                                            &block, isa, Int32(image), Int32(residue), Int32(rows(chunk)),
                                            Int32(rows(chunk + 1)), workspace.assumingMemoryBound(to: Float.self))
                                        if status != 0 {
                                            failed.withLock {
                                                $0 = "dilation, stride or stem out of the kernels' range"
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        if let reason = failed.withLock({ $0 }) { throw DeepLabError.invalidConfiguration("\(name): \(reason)") }
        return output
    }
}

extension SeparableConvolution {
    /// The environment variable that overrides the default for measuring: `0` runs separable convolutions unit by
    /// unit, `1` fuses those that fit on any ISA with kernels.
    static let variable = "SLICELAB_FUSED_SEPARABLE"

    /// Whether separable convolutions of this process fuse: where blocks do (`FusedInvertedResidual`), or as
    /// `variable` says.
    static let fusedInThisProcess = FusedKernels.measuringSwitch(
        variable, else: FusedInvertedResidual.enabledInThisProcess)
}
