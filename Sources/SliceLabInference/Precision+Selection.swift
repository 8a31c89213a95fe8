import DeepLab

extension Precision {
    /// Why `precision` cannot run the checkpoint at `model`, or nil when it can: a quantised checkpoint runs in
    /// int8 only, a float32 one not in int8, and bf16 needs oneDNN's bf16 kernels (`Bf16Support`:
    /// `AVX512_CORE_BF16` or AMX; the reason names this CPU's oneDNN ISA).
    ///
    /// - Throws: the checkpoint's read errors.
    public func problem(model: String) throws -> String? {
        let quantized = try DeepLabCheckpoint.isQuantized(model)
        switch self {
        case .int8 where !quantized:
            return "\(model) is a float32 checkpoint; make an int8 one with 'slicelab quantize'"
        case .fp32 where quantized, .bf16 where quantized:
            return "\(model) is an int8 (quantised) checkpoint and runs in int8 only; use the float32 checkpoint "
                + "it was made from for \(rawValue)"
        case .bf16:
            return Self.bf16Problem
        default:
            return nil
        }
    }

    /// Why bf16 cannot run on this CPU (naming oneDNN's effective ISA), or nil when it can.
    public static var bf16Problem: String? {
        guard case .failure(let error) = Bf16Support.execution() else { return nil }
        if case .unavailablePrecision(_, let reason) = error { return reason }
        return "\(error)"
    }

    /// Sets a loaded float32 model to run in `precision` (nil or the checkpoint's own: unchanged): bf16 with
    /// this CPU's execution (`Bf16Support`).
    ///
    /// - Throws: `DeepLabError.unavailablePrecision` when this CPU or the model cannot run it.
    public func select(for model: DeepLabV3) throws {
        guard self == .bf16 else { return }
        try model.useBf16(Bf16Support.execution().get())
    }
}
