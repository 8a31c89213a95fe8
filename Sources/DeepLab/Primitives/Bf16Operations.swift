import COneDNN
import Foundation

// The raw oneDNN side of the bf16 path: which CPUs run it, the element type of a bf16 convolution's operands,
// and the conversions into them (oneDNN's rounding reorders natively, round-to-nearest-even in Swift when
// emulated). `Bf16Convolution` goes through these; nothing else of the target names a bf16 data type.

/// How a model's bf16 convolutions run.
public enum Bf16Execution: String, Sendable, Hashable {
    /// oneDNN's bf16 primitives: bf16 sources, weights and gradients of the output, f32 accumulation and
    /// f32 outputs (AMX or AVX512_CORE_BF16 kernels).
    case native
    /// The same graph, reorder points and f32 outputs on f32 primitives, fed values rounded to bf16
    /// (round-to-nearest-even) wherever the native path holds bf16: the path's logic on any CPU, for tests.
    case emulated

    /// The element type of the convolutions' bf16 operands (sources, weights, output gradients).
    var operandType: dnnl_data_type_t { self == .native ? dnnl_bf16 : dnnl_f32 }
}

extension Bf16Execution: PrimitiveKeyPart {
    func appendKeyBytes(to bytes: inout [UInt8]) { rawValue.appendKeyBytes(to: &bytes) }
}

/// Where SliceLab selects bf16, from oneDNN's effective ISA (`dnnl_get_effective_cpu_isa`, after any
/// `ONEDNN_MAX_CPU_ISA` cap): natively wherever oneDNN has bf16 kernels, `AVX512_CORE_BF16` and `AVX512_CORE_AMX`.
///
/// Measured natively on both (Benchmarks/README.md, `bench_bf16_layers.py`): the bundled model's forward took
/// 0.71 × its fp32 time with AMX (Sapphire Rapids) and 0.75 × with `AVX512_CORE_BF16` on an AMD EPYC Zen 5,
/// whose bf16 1 × 1 and depthwise kernels ran at 0.75 × and 0.81 × their fp32 time. (An AMX Xeon capped to
/// `AVX512_CORE_BF16` had run them slower than fp32, before bf16 activations were handed from unit to unit; a capped
/// Intel core is not the AMD core.) Below that oneDNN 2.6 only emulates bf16 instructions (AVX-512) or has no bf16
/// convolution kernels (AVX2), so bf16 is refused there. `SLICELAB_BF16_EMULATION=1` (tests only) selects
/// `.emulated` on any CPU.
public enum Bf16Support {
    /// The environment variable that forces the emulated bf16 path on any CPU (tests only).
    public static let emulationVariable = "SLICELAB_BF16_EMULATION"

    /// Whether oneDNN's effective ISA has bf16 instructions (`AVX512_CORE_BF16` or above).
    public static var hasBf16Instructions: Bool { effectiveISAIncludes(dnnl_cpu_isa_avx512_core_bf16) }

    private static func effectiveISAIncludes(_ level: dnnl_cpu_isa_t) -> Bool {
        dnnl_get_effective_cpu_isa().rawValue & level.rawValue == level.rawValue
    }

    /// The execution `--precision bf16` gets on this CPU, or why it is refused (one line naming oneDNN's
    /// effective ISA).
    public static func execution(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> Result<Bf16Execution, DeepLabError>
    {
        if environment[emulationVariable] == "1" { return .success(.emulated) }
        if hasBf16Instructions { return .success(.native) }
        let why =
            effectiveISAIncludes(dnnl_cpu_isa_avx512_core)
            ? ", which lacks bf16 instructions (oneDNN only emulates them)"
            : ", which has no bf16 convolution kernels"
        return .failure(
            .unavailablePrecision(
                precision: "bf16",
                reason: "this CPU's oneDNN ISA is "
                    + "\(oneDNNEffectiveISA)\(why); bf16 runs on AVX512_CORE_BF16 and AVX512_CORE_AMX"))
    }
}

/// The nearest bf16 value to `x` (round to nearest, ties to even), widened back to f32; NaN stays NaN.
/// The rounding oneDNN's f32 → bf16 reorders and PyTorch's `.to(torch.bfloat16)` apply.
@inline(__always)
func bfloat16Rounded(_ x: Float) -> Float {
    let bits = x.bitPattern
    if x.isNaN { return Float(bitPattern: (bits | 0x0040_0000) & 0xFFFF_0000) }
    let rounded = bits &+ 0x7FFF &+ ((bits >> 16) & 1)
    return Float(bitPattern: rounded & 0xFFFF_0000)
}

enum Bf16Operations {
    /// `x` (f32, any layout) in the layout and type of `target`, a bf16 operand of a primitive built for
    /// `execution`: converted by oneDNN's reorder (which rounds to nearest even) natively; emulated, copied
    /// into the f32 `target` and rounded to bf16 values. Never `x` itself when emulated (callers keep it).
    /// Rests on `dnnl_reorder_primitive_desc_create`.
    static func convert(_ x: Tensor, into target: MemoryDesc, _ execution: Bf16Execution) throws -> Tensor {
        guard execution == .emulated else { return try x.reordered(to: target) }
        let output = try Tensor(desc: target)
        try x.reorder(into: output)
        roundToBfloat16(output)
        return output
    }

    /// Rounds an f32 tensor's values (its padding included, which stays zero) to bf16 in place.
    static func roundToBfloat16(_ x: Tensor) {
        x.withStorage { values in
            let count = values.count
            let chunk = 1 << 16
            concurrentForEach(0..<((count + chunk - 1) / chunk)) { c in
                for i in (c * chunk)..<min(count, (c + 1) * chunk) { values[i] = bfloat16Rounded(values[i]) }
            }
        }
    }
}
