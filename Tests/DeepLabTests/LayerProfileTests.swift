import DeepLabTestSupport
import Foundation
import SliceLabSupport
import Testing

@testable import DeepLab

/// `segment --timings`' roofline rows: every convolution unit profiled (a fused block as one row, on its first unit
/// under the block's name; the fused stem with the first block as one, on the stem under both names), its
/// multiply-adds those the model counts, its bytes at least its input and output, oneDNN's kernel named; the first
/// call's primitive creation left out.
@Suite(.serialized) struct LayerProfileTests {
    @Test(arguments: [false, true]) func everyUnitIsProfiledWithItsWorkAndTraffic(fused: Bool) throws {
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: 3, inputChannels: 1, outputStride: 8, atrousRates: [2, 4],
                asppChannels: 16, widthMultiplier: 0.35, seed: 1))
        DeterministicWeights.fill(model)
        let backbone = try #require(model.backbone as? MobileNetV2)
        let blocks = backbone.blocks
        guard !fused || FusedInvertedResidual.effectiveISA != nil else {
            return print("LayerProfileTests: fused blocks skipped: no kernels for oneDNN ISA \(oneDNNEffectiveISA)")
        }
        for block in blocks { block.fusion = fused ? FusedInvertedResidual(always: true) : nil }
        backbone.stemFusion = fused ? FusedStem() : nil
        let input = FloatTensor(
            shape: [1, 1, 33, 41], values: DeterministicWeights.uniform(33 * 41, salt: 7).map { Float($0) })
        model.resetMultiplyAddCount()
        _ = try model.forward(input, training: false)
        #expect(model.layerProfiles.isEmpty, "profiling is off by default")

        model.resetMultiplyAddCount()
        try DeepLabV3.profilingLayers {
            for _ in 0..<3 { _ = try model.forward(input, training: false) }
        }
        // The rows expected: a unit's, a fused block's (all of this narrow model's blocks fit), or the fused stem's
        // with the first block.
        let rows: [(name: String, units: [ConvUnit])] = model.convUnits.compactMap { unit in
            if fused, unit === backbone.stem { return ("\(unit.name) + \(blocks[0].name)", [unit] + blocks[0].units) }
            guard fused, let block = blocks.first(where: { $0.units.contains { $0 === unit } }) else {
                return (unit.name, [unit])
            }
            return block.units[0] === unit && block !== blocks[0] ? (block.name, block.units) : nil
        }
        let profiles = model.layerProfiles
        #expect(profiles.count == rows.count)
        #expect(profiles.reduce(0) { $0 + $1.multiplyAdds } == model.multiplyAddCount)
        for (profile, row) in zip(profiles, rows) {
            #expect(profile.name == row.name && profile.calls == 3)
            #expect(profile.multiplyAddsInside > 0 && profile.multiplyAddsInside <= profile.multiplyAdds)
            let first = row.units[0].conv
            let last = try #require(row.units.last).conv
            #expect(
                profile.bytes >= Double(3 * 4 * (first.inputChannels + last.outputChannels)), "\(profile.name)")
            if row.units.count > 1 {
                let strategy = row.units[0] === backbone.stem ? "fused-stem" : "fused-block"
                #expect(profile.seconds > 0 && profile.strategy == strategy, "\(profile)")
                continue
            }
            // oneDNN's direct convolution, or (where the ISA's table has them) padding-free rectangles for dilated
            // dense ones, both running oneDNN convolutions whose kernels are named; or the own depthwise kernel.
            let table = ConvolutionStrategyTable.effective
            let rectangles = first.groups == 1 && table.paddingFreeRectangles && first.window.dilation > 1
            let expected = ["direct"] + (rectangles ? ["padding-free"] : []) + ["own-depthwise"]
            #expect(profile.seconds > 0 && expected.contains(profile.strategy), "\(profile)")
            #expect(
                !profile.implementations.isEmpty || profile.strategy == "own-depthwise",
                "\(profile.name): oneDNN's kernel is named \(profile)")
        }
    }

    /// The forward's other operations are profiled apart from the convolutions, in the order they ran: each call
    /// timed, its bytes at least what it reads and writes, no multiply-adds; nothing when profiling is off.
    @Test func otherOperationsAreProfiledApart() throws {
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, decoder: .v3plus, classCount: 3, inputChannels: 1, outputStride: 8,
                atrousRates: [2, 4], asppChannels: 16, widthMultiplier: 0.35, seed: 1))
        DeterministicWeights.fill(model)
        let input = FloatTensor(
            shape: [1, 1, 33, 41], values: DeterministicWeights.uniform(33 * 41, salt: 7).map { Float($0) })
        model.resetMultiplyAddCount()
        _ = try model.forward(input, training: false)
        #expect(model.operationProfiles.isEmpty, "profiling is off by default")
        try DeepLabV3.profilingLayers {
            for _ in 0..<3 { _ = try model.forward(input, training: false) }
        }
        let operations = model.operationProfiles
        #expect(
            operations.map(\.name) == ["image pooling", "ASPP concatenation", "decoder join", "logits resize"],
            "\(operations.map(\.name))")
        #expect(operations.map(\.strategy) == ["pool", "concat", "join", "resize"])
        for operation in operations {
            #expect(operation.calls == 3 && operation.seconds > 0 && operation.multiplyAdds == 0, "\(operation)")
        }
        // The logits: 3 classes at the input's size, written, and at stride 4 read (3 calls of each).
        let logits = try #require(operations.last)
        #expect(logits.bytes >= Double(3 * 4 * 3 * 33 * 41), "\(logits)")
        #expect(model.layerProfiles.allSatisfy { $0.multiplyAdds > 0 })
        model.resetMultiplyAddCount()
        #expect(model.operationProfiles.isEmpty)
    }

    /// Primitive creation is left out; the first call counts at the later calls' rate, its excess is setup.
    @Test func creationAndTheFirstCallsExcessAreSetup() {
        var profile = LayerProfile(name: "u", strategy: "direct", implementations: [])
        profile.record(seconds: 1.0, creation: 0.4, multiplyAdds: 100, bytes: 40)
        #expect(abs(profile.seconds - 0.6) < 1e-12 && abs(profile.setupSeconds - 0.4) < 1e-12 && profile.bytes == 40)
        profile.record(seconds: 0.1, multiplyAdds: 100, bytes: 40)
        profile.record(seconds: 0.1, multiplyAdds: 100, bytes: 40)
        #expect(abs(profile.seconds - 0.3) < 1e-12 && abs(profile.setupSeconds - 0.9) < 1e-12)
        #expect(profile.bytes == 120 && profile.multiplyAdds == 300 && profile.calls == 3)
        #expect(abs(profile.intensity - 2.5) < 1e-12)
        // 3 taps at each of 5 positions with padding 1: the two border positions each lose one; dilated by 2
        // with padding 2 on 5: positions 0, 1 lose one, 3, 4 lose one, 2 none.
        #expect(LayerProfile.tapsInside(5, 5, 3, 1, 1, 1) == 13)
        #expect(LayerProfile.tapsInside(5, 5, 3, 1, 2, 2) == 11)
        #expect(LayerProfile.tapsInside(8, 4, 3, 2, 1, 1) == 11)
    }
}
