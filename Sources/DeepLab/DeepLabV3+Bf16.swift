extension DeepLabV3 {
    /// Runs the model's convolutions in bf16 (`Bf16Convolution`) with `execution`, or back in f32 (nil), in
    /// eval mode and in training. The parameters stay f32 (the master weights the optimizer updates and the
    /// checkpoint stores); the convolutions read bf16 copies made from them.
    ///
    /// Left in f32 (`float32UnitNamesUnderBf16`): the units calibration leaves in f32 for int8 (`floatUnitNames`),
    /// and those that measured slower in bf16 than in f32. In eval mode the own depthwise kernel, the fused
    /// blocks and, where the ISA's table says so, Winograd also take some bf16 units in f32 where they measured
    /// faster, by shape (`OwnDepthwiseConvolution`, `FusedInvertedResidual.outrunsBf16`,
    /// `ConvolutionStrategyTable.winogradBeforeBf16`).
    ///
    /// - Throws: `DeepLabError.unavailablePrecision` for a quantised model, which runs in int8 only.
    public func useBf16(_ execution: Bf16Execution?) throws {
        if execution != nil, quantization != nil {
            throw DeepLabError.unavailablePrecision(
                precision: "bf16",
                reason: "the model is quantised and runs in "
                    + "int8 only; use the float32 checkpoint it was made from")
        }
        let float32 = float32UnitNamesUnderBf16
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
        let float32 = float32UnitNamesUnderBf16
        return convUnits.map(\.name).filter { !float32.contains($0) }
    }

    /// The units `useBf16(_:)` leaves in f32: `floatUnitNames`; convolutions of at most
    /// `Bf16Convolution.minimumInputChannels` - 1 input channels (a 1-channel stem: AMX's tiles pad its products to
    /// 32 channels, and it ran 1.9 × slower in bf16 on the AMX Xeon); and depthwise convolutions at the head of their
    /// chain, whose input arrives in f32 and which are bound by memory either way (converting the input cost more
    /// than bf16 saved: DeepLabV3+'s separable ASPP and decoder convolutions ran 1.2–1.5 × slower in bf16).
    /// Benchmarks/README.md has the measurements.
    var float32UnitNamesUnderBf16: Set<String> {
        let stems = convUnits.filter {
            $0.conv.groups == 1 && $0.conv.inputChannels < Bf16Convolution.minimumInputChannels
        }
        let chainHeads = (backbone.unitChains + head.unitChains).compactMap(\.first).filter {
            $0.conv.groups > 1 && $0.conv.groups == $0.conv.inputChannels
        }
        return floatUnitNames.union((stems + chainHeads).map(\.name))
    }
}
