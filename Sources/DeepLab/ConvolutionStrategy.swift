/// One way of computing a `ConvUnit`'s convolution: oneDNN's direct convolution (`DirectConvolution`), one
/// convolution per rectangle of output without the taps that read only padding (`PaddingFreeConvolution`), or
/// Winograd's F(2×2, 3×3) or F(4×4, 3×3) (`WinogradConvolution`). All give the same numbers to float32 rounding
/// (Winograd's within 1e-5 of the largest output).
///
/// A unit asks its strategies in order and runs the first that applies; tests pass the one they compare
/// (`ConvUnit.callAsFunction(_:residual:consumingResidual:training:strategy:)`). A strategy instance keeps the
/// primitives and eval-mode weights of the unit it serves.
protocol ConvolutionStrategy: AnyObject {
    /// Whether this strategy computes `unit` on input dims `inputShape` (NCHW): in eval mode with a residual
    /// input when `residual`, or in training mode when `training`.
    func applies(to unit: ConvUnit, inputShape: [Int], residual: Bool, training: Bool) -> Bool

    /// Eval mode: act(bn(conv(x)) + residual) with batch norm folded into the weights. `consumingResidual`: the
    /// caller no longer needs `residual`, so the output may be written into it.
    func inferenceForward(
        _ unit: ConvUnit, _ x: Tensor, residual: Tensor?,
        consumingResidual: Bool
    ) throws -> Tensor

    /// Training mode: the convolution alone (batch norm, residual and activation follow in the unit), with the
    /// unit's own weights, and what `backward` needs.
    func trainingForward(_ unit: ConvUnit, _ x: Tensor) throws -> (output: Tensor, saved: SavedConvolution)

    /// Backward of `trainingForward`: the weight (and bias) gradients are accumulated into the unit's
    /// parameters; dLoss/dInput is returned when `needsInputGradient`. `dy` is dLoss/d(convolution output).
    func backward(
        _ unit: ConvUnit, _ dy: Tensor, saved: SavedConvolution,
        needsInputGradient: Bool
    ) throws -> Tensor?

    /// Drops the eval-mode weights kept for the unit (training is about to change its parameters).
    func releaseInferenceWeights()
}

extension ConvolutionStrategy {
    /// The strategy's name in `--timings`: its type's, without `Convolution` (`direct`, `winograd`, `int8`…).
    var label: String {
        let name = String(describing: type(of: self)).replacingOccurrences(of: "Convolution", with: "")
        return name.enumerated().map { index, c in
            c.isUppercase ? (index > 0 ? "-" : "") + c.lowercased() : String(c)
        }.joined()
    }
}

/// What a training forward kept for its strategy's backward.
enum SavedConvolution {
    /// One primitive on `input` (the unit's input of dims `inputShape`, or with `explicitPadding` that input
    /// padded).
    case whole(input: Tensor, inputShape: [Int], primitive: Primitive, explicitPadding: Bool)
    /// One primitive per rectangle of `plan` (see `PaddingFreeConvolution`).
    case rectangles(input: Tensor, plan: TapPlan)
}

/// The destination of a convolution with a fused sum post-op: `residual` itself when the caller gives it up and
/// its layout is `desc`, else a new tensor of `desc` holding a copy of it (or an empty one without a residual).
func fusedSumDestination(_ desc: MemoryDesc, residual: Tensor?, consumingResidual: Bool) throws -> Tensor {
    if let residual, consumingResidual, residual.desc.isEqual(to: desc) { return residual }
    let output = try Tensor(desc: desc)
    if let residual { try residual.reorder(into: output) }
    return output
}

/// Runs a convolution's backward-weights `primitive` on `source` and `diffDestination` (in its layouts) and adds
/// the f32 weight (and bias) gradients into `conv`'s parameters.
func accumulateWeightGradients(
    _ conv: Conv2d, _ primitive: Primitive, source: Tensor,
    diffDestination: Tensor
) throws {
    let diffWeights = try Tensor(desc: primitive.desc(.diffWeights))
    var arguments: [(Int32, Tensor)] = [
        (Arg.src, source), (Arg.diffDst, diffDestination),
        (Arg.diffWeights, diffWeights)
    ]
    var diffBias: Tensor?
    if conv.bias != nil {
        let b = try Tensor(desc: primitive.desc(.diffWeights, 1))
        arguments.append((Arg.diffBias, b))
        diffBias = b
    }
    try primitive.execute(arguments)
    accumulate(
        conv.weight,
        try diffWeights.reordered(
            to: .make(conv.weightDims, MemoryDesc.plainTag(rank: conv.weightDims.count))))
    if let bias = conv.bias, let diffBias { accumulate(bias, diffBias) }
}

/// Which convolution strategies a unit may use, per oneDNN effective ISA (issue #19): a fixed, committed
/// table, so every process on the same ISA computes the same thing (never a timed choice at run time, never the
/// machine's name). Int8 units and oneDNN's direct convolution are always available.
///
/// - AVX2 (and AVX2-VNNI, whose fp32 kernels are AVX2's): padding-free rectangles (fp32 and int8) and Winograd,
///   as measured on the AMD EPYC (README, *Measured speed*: DeepLabV3-ResNet-50 1.49 s against 1.78 s for ONNX
///   Runtime; *Precision*: int8 ASPP by rectangles); since natively measured on an AMD EPYC with AVX2 only (Zen 3,
///   Benchmarks/README.md, 2026-12-07): Winograd by F(4×4, 3×3) (ResNet-50 0.875 × F(2×2)'s time), the own depthwise
///   kernel, MobileNetV2's memory-bound blocks and separable convolutions fused (the bundled model 0.94 × the
///   time unfused; capped to AVX2 on the AMX Xeon they had been slower, a different core's AVX2), every separable
///   convolution, not only the large rates (ASPP's rate 6 0.72 ×, DeepLabV3+'s undilated decoder convolution
///   0.69 × the units' time there).
/// - AVX-512 (with or without VNNI, BF16, AMX): oneDNN's own kernels, Winograd F(4×4, 3×3) for wide 3 × 3
///   convolutions whose taps nearly all read the input, MobileNetV2's memory-bound inverted-residual blocks fused
///   (measured on the AMX Xeon natively and capped to `AVX512_CORE`, natively on an Intel Xeon with AVX-512 VNNI
///   and no AMX and on an AMD EPYC Zen 5 with AVX-512 BF16, Benchmarks/README.md); AMX's entry adds its own
///   measured items below. SSE4.1/AVX: oneDNN's kernels.
public struct ConvolutionStrategyTable: Equatable, Sendable {
    /// Dilated 3×3 convolutions whose padding taps are a tenth of the work or more run as padding-free rectangles
    /// (`PaddingFreeConvolution` in f32, eval and training; `Int8Convolution` in int8).
    public var paddingFreeRectangles: Bool
    /// Wide 3×3 convolutions (and padding-free all-taps centres) run by Winograd F(2×2, 3×3) in eval mode
    /// (`WinogradConvolution`).
    public var winograd: Bool
    /// With `winograd`, only convolutions with at least this share of their taps reading the input (0: any): the
    /// transforms compute every tap, padding or not.
    public var winogradMinimumInsideShare = 0.0
    /// With `winograd`, the outputs of a tile along each axis: 2, F(2×2, 3×3), or 4, F(4×4, 3×3)
    /// (`WinogradConvolution`).
    public var winogradTile = 2
    /// u8-input 3×3 convolutions of int8 models run by exact integer Winograd F(4×4) or F(2×2) (`Int8Winograd`, AVX2
    /// kernels of 16-bit products; with VNNI oneDNN's direct kernels multiply twice as fast, so not there).
    public var int8Winograd: Bool
    /// Dilated int8 convolutions on oneDNN's `brgconv` kernels rather than its older `jit:avx512_core_amx_int8`
    /// (oneDNN 2.6 picks that one first on AMX for some of them, ASPP's rates 12 and 24 here; see
    /// Benchmarks/README.md). The same integer arithmetic: the outputs are identical.
    public var int8DilatedOnBrgconv = false
    /// Narrow int8 1 × 1 convolutions (`Int8Convolution.isNarrowPointwise`) on oneDNN's VNNI kernels rather than its
    /// AMX ones, whose tiles they fill poorly (see Benchmarks/README.md). The same integer arithmetic.
    public var int8NarrowPointwiseOffAMX = false
    /// With `winograd`, bf16 units Winograd takes run it (in float32) in eval mode rather than oneDNN's bf16 direct
    /// convolution, where that measured faster (`AVX512_CORE_BF16`; with AMX, bf16 runs on tiles and wins).
    public var winogradBeforeBf16 = false
    /// Dilated depthwise 3 × 3 convolutions with most taps in the padding run on our own kernel in eval mode
    /// (`OwnDepthwiseConvolution`; DeepLabV3+'s separable ASPP branches).
    public var ownDepthwise = false
    /// MobileNetV2's memory-bound inverted-residual blocks run in one pass in eval mode, float32
    /// (`FusedInvertedResidual`).
    public var fusedInvertedResiduals = false
    /// With `fusedInvertedResiduals`, every separable convolution fused, undilated ones and rates whose taps mostly
    /// read the input too, not only the large rates (`SeparableConvolution.fusionPays`).
    public var separablesFusedAtEveryRate = false
    /// Whether the entry was measured on its ISA (false: a default, oneDNN's kernels).
    public var measured: Bool

    /// oneDNN's own kernels for every convolution.
    public static let oneDNN = ConvolutionStrategyTable(
        paddingFreeRectangles: false, winograd: false,
        int8Winograd: false, measured: false)

    /// AMX: oneDNN's kernels, Winograd as on AVX-512 (`avx512WinogradInsideShare`), dilated int8 convolutions on
    /// `brgconv` and narrow 1 × 1 ones on VNNI (measured, as the fp32 and int8 padding-free rectangles that did not
    /// pay there, on the bundled model nor on ResNet-50's ASPP; fp32 Winograd was 4–6 × slower on the bundled
    /// model's ASPP, mostly padding); the own depthwise kernel, fused blocks (Benchmarks/README.md).
    public static let amx = ConvolutionStrategyTable(
        paddingFreeRectangles: false, winograd: true, winogradMinimumInsideShare: avx512WinogradInsideShare,
        winogradTile: 4, int8Winograd: false, int8DilatedOnBrgconv: true, int8NarrowPointwiseOffAMX: true,
        ownDepthwise: true, fusedInvertedResiduals: true, measured: false)

    /// AVX-512 without AMX: oneDNN's kernels, Winograd where nearly every tap reads the input, the own depthwise
    /// kernel, MobileNetV2's blocks fused (measured on the AMX Xeon, whose float32 kernels are `avx512_core`'s, and
    /// capped to `AVX512_CORE` there). Winograd by F(4×4, 3×3): ResNet-50's Winograd layers took 0.36–0.52 × the
    /// time of F(2×2) by one GEMM a plane, natively on the Intel Xeon with VNNI and capped to `AVX512_CORE` there
    /// (Benchmarks/README.md, 2026-12-07, third session); AMX's float32 kernels are these.
    public static let avx512 = ConvolutionStrategyTable(
        paddingFreeRectangles: false, winograd: true, winogradMinimumInsideShare: avx512WinogradInsideShare,
        winogradTile: 4, int8Winograd: false, ownDepthwise: true, fusedInvertedResiduals: true, measured: false)

    /// AVX-512 with VNNI and without BF16 (Intel since Cascade Lake, before Sapphire Rapids): `avx512`, measured on an
    /// Intel Xeon without AMX (Benchmarks/README.md, 2026-12-07): Winograd 0.97 × oneDNN's time on ResNet-50, the fused
    /// blocks 0.94–0.97 × oneDNN's units and the own depthwise kernel 0.82–0.93 × the fused blocks alone on the
    /// bundled model (two runs).
    public static let avx512VNNI = avx512.measuredOnItsISA

    /// AVX-512 with BF16 and without AMX (AMD since Zen 4): `avx512`, measured natively on an AMD EPYC Zen 5
    /// (Benchmarks/README.md, 2026-12-08, `bench_strategies.py`): Winograd 0.80 × oneDNN's time on ResNet-50, the
    /// fused blocks 0.82 × the units on the bundled model, the own depthwise kernel 0.98 × (within the noise); and
    /// Winograd before bf16 (ResNet-50's forward in bf16 0.905 ×).
    public static let avx512BF16: ConvolutionStrategyTable = {
        var entry = avx512.measuredOnItsISA
        entry.winogradBeforeBf16 = true
        return entry
    }()

    /// This entry, marked as measured on the ISA it is listed for.
    private var measuredOnItsISA: ConvolutionStrategyTable {
        var entry = self
        entry.measured = true
        return entry
    }

    /// Winograd's share of taps on AVX-512 (see `winogradMinimumInsideShare`). DeepLabV3-ResNet-50 on 512² on the
    /// AMX Xeon, 3 forwards: its dilated 3 × 3 convolutions at 92–96 % of their taps inside took 0.75–0.86 × oneDNN's
    /// time by Winograd (layer 4's 512 channels at dilation 4: 192 → 144 ms), ASPP's branches at 77, 56 and 39 %
    /// 1.5, 2.5 and 3.2 ×.
    static let avx512WinogradInsideShare = 0.9

    /// The committed entries by ISA name (`oneDNNEffectiveISA`); an ISA not listed takes `oneDNN`.
    public static let entries: [String: ConvolutionStrategyTable] = [
        "AVX2": ConvolutionStrategyTable(
            paddingFreeRectangles: true, winograd: true, winogradTile: 4, int8Winograd: true, ownDepthwise: true,
            fusedInvertedResiduals: true, separablesFusedAtEveryRate: true, measured: true),
        "AVX2_VNNI": ConvolutionStrategyTable(
            paddingFreeRectangles: true, winograd: true, int8Winograd: false,
            measured: false),
        "AVX512_CORE": .avx512, "AVX512_CORE_VNNI": .avx512VNNI, "AVX512_CORE_BF16": .avx512BF16,
        "AVX512_CORE_AMX": .amx
    ]

    /// The entry for `isa`.
    public static func forISA(_ isa: String) -> ConvolutionStrategyTable { entries[isa] ?? .oneDNN }

    /// The entry for the ISA oneDNN runs at in this process (after any `ONEDNN_MAX_CPU_ISA` cap).
    public static let effective = forISA(oneDNNEffectiveISA)

    /// The strategies a unit asks in order: int8 and bf16 first, the table's fp32 ones, oneDNN's direct
    /// convolution last.
    func strategies() -> [ConvolutionStrategy] {
        var winograd: WinogradConvolution? = nil
        if WinogradConvolution.enabled(by: self) {
            winograd = WinogradConvolution(
                minimumInsideShare: winogradMinimumInsideShare, tile: WinogradConvolution.tile(by: self))
        }
        let winogradFirst = FusedKernels.measuringSwitch(
            WinogradConvolution.beforeBf16Variable, else: winogradBeforeBf16)
        var strategies: [ConvolutionStrategy] = [
            Int8Convolution(
                rectangles: paddingFreeRectangles, winograd: int8Winograd, dilatedOnBrgconv: int8DilatedOnBrgconv,
                narrowPointwiseOffAMX: int8NarrowPointwiseOffAMX)
        ]
        if winogradFirst, let winograd { strategies.append(winograd) }
        strategies.append(Bf16Convolution())
        if OwnDepthwiseConvolution.enabled(by: self), let own = OwnDepthwiseConvolution() { strategies.append(own) }
        if paddingFreeRectangles { strategies.append(PaddingFreeConvolution(centre: winograd)) }
        if !winogradFirst, let winograd { strategies.append(winograd) }
        return strategies + [DirectConvolution()]
    }

    /// "padding-free rectangles, Winograd F(2×2, 3×3), else oneDNN's (measured)" or "oneDNN's kernels (not
    /// measured)"; the fp32 strategies only.
    public var summary: String {
        let parts =
            (paddingFreeRectangles ? ["padding-free rectangles"] : [])
            + (winograd ? ["Winograd F(\(winogradTile)×\(winogradTile), 3×3)"] : [])
            + (ownDepthwise ? ["own depthwise kernel"] : [])
            + (fusedInvertedResiduals
                ? [
                    "fused inverted-residual blocks (the first with the stem and upscale) and separable convolutions"
                        + (separablesFusedAtEveryRate ? " (every rate)" : " (large rates)")
                ]
                : [])
        return (parts.isEmpty ? "oneDNN's kernels" : parts.joined(separator: ", ") + ", else oneDNN's")
            + (measured ? " (measured)" : " (not measured)")
    }

    /// "exact integer Winograd (AVX2 kernels), else oneDNN's" or "oneDNN's kernels".
    public var int8Summary: String {
        (int8Winograd ? "exact integer Winograd (AVX2 kernels), else oneDNN's" : "oneDNN's kernels")
            + (int8DilatedOnBrgconv ? " (dilated ones on brgconv)" : "")
            + (int8NarrowPointwiseOffAMX ? " (narrow 1 × 1 ones on VNNI)" : "")
    }
}
