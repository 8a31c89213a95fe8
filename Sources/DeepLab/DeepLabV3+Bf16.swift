extension DeepLabV3 {
    /// Runs the model's convolutions in bf16 (`Bf16Convolution`) with `execution`, or back in f32 (nil), in
    /// eval mode and in training. The parameters stay f32 (the master weights the optimizer updates and the
    /// checkpoint stores); the convolutions read bf16 copies made from them.
    ///
    /// Left in f32, as calibration leaves them for int8 (`floatUnitNames`): the classifiers, whose logits decide
    /// the labels and which are a small share of the work, and ASPP's image-pooling branch (a 1 × 1 input).
    ///
    /// - Throws: `DeepLabError.unavailablePrecision` for a quantised model, which runs in int8 only.
    public func useBf16(_ execution: Bf16Execution?) throws {
        if execution != nil, quantization != nil {
            throw DeepLabError.unavailablePrecision(
                precision: "bf16",
                reason: "the model is quantised and runs in "
                    + "int8 only; use the float32 checkpoint it was made from")
        }
        let float32 = floatUnitNames
        for unit in convUnits {
            unit.bf16 = float32.contains(unit.name) ? nil : execution
            unit.bf16Output = false
            for strategy in unit.strategies { strategy.releaseInferenceWeights() }
        }
        // Inside a chain, a bf16 unit feeding a bf16 unit hands it bf16 activations.
        for chain in backbone.unitChains + head.unitChains {
            for (unit, next) in zip(chain, chain.dropFirst()) where unit.runsInBf16 && next.runsInBf16 {
                unit.bf16Output = true
            }
        }
        bf16 = execution
    }

    /// The `state_dict` prefixes of the convolution units that run in bf16 under `useBf16(_:)`, in forward
    /// order (the backbone's, the head's, the auxiliary head's).
    public var bf16UnitNames: [String] {
        let float32 = floatUnitNames
        return convUnits.map(\.name).filter { !float32.contains($0) }
    }
}
