import DeepLab
import DeepLabTestSupport
import Foundation
import ImageFiles
import TestSupport
import Testing

/// torchvision state_dict import (safetensors), the parity CLI contract, and native HDF5 checkpoints.
@Suite(.serialized) struct WeightImportTests {
    @Test func parityEntryPointReproducesTorchvisionLogitsFromSafetensors() throws {
        let folder = try TestSupport.temporaryFolder("deeplab-parity")
        defer { try? FileManager.default.removeItem(at: folder) }
        let name = "resnet18_c1_97x131"
        let golden = try HDF5File.open(DeterministicWeights.goldens.path)
        let model = try DeepLabV3(DeepLabConfiguration(architecture: .resnet18, classCount: 3, inputChannels: 1))
        DeterministicWeights.fill(model)
        let weights = folder.appendingPathComponent("w.safetensors").path
        try model.saveSafetensors(to: weights)
        let input = DeterministicWeights.input([2, 1, 97, 131])
        let inputPath = folder.appendingPathComponent("in.h5").path
        try HDF5File.write(to: inputPath) { try $0.write(input.values, shape: input.shape, to: "/image") }
        let output = folder.appendingPathComponent("out.h5").path
        let result = try TestSupport.run(
            TestSupport.slicelabBinary,
            [
                "segment", "--weights", weights, "--arch", "deeplabv3_resnet18", "--num-classes", "3", "--in-channels",
                "1",
                "--raw-input", inputPath, "--logits", output, "--threads", "2"
            ])
        #expect(result.status == 0, "\(result.standardError)")
        let logits = try HDF5File.open(output).read("/logits", as: Float.self)
        let expected = try golden.read("/\(name)/logits", as: Float.self)
        #expect(logits.shape == [2, 3, 97, 131])
        let (difference, scale) = maxDifference(logits.values, expected.values)
        #expect(difference <= 1e-4 * scale, "max|Δ| \(difference), max|logit| \(scale)")
    }

    @Test func rgbWeightsSumIntoGrayModelAndNewClassCountReinitialisesOnlyTheClassifier() throws {
        let rgb = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: 5, inputChannels: 3,
                outputStride: 16, asppChannels: 16, widthMultiplier: 0.5))
        DeterministicWeights.fill(rgb)
        let gray = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: 2, inputChannels: 1,
                outputStride: 16, asppChannels: 16, widthMultiplier: 0.5,
                seed: 7))
        let freshClassifier = try #require(gray.parametersByName["classifier.4.weight"]).value
        let state = Dictionary(
            uniqueKeysWithValues: rgb.parameters.map {
                ($0.name, FloatTensor(shape: $0.shape, values: $0.value))
            })
        let notes = try gray.load(stateDict: state, source: "rgb.safetensors")
        #expect(notes.contains { $0.contains("backbone.0.0.weight") && $0.contains("summed") })
        #expect(notes.contains { $0.contains("re-initialised classifier.4.weight, classifier.4.bias") })
        let byName = gray.parametersByName
        #expect(byName["classifier.4.weight"]?.value == freshClassifier)
        let source = try #require(state["backbone.0.0.weight"])
        let summed = try #require(byName["backbone.0.0.weight"])
        #expect(summed.shape == [16, 1, 3, 3])
        for f in 0..<16 {
            for i in 0..<9 {
                let expected = (0..<3).reduce(Float(0)) { $0 + source.values[(f * 3 + $1) * 9 + i] }
                #expect(abs(summed.value[f * 9 + i] - expected) <= 1e-6 * max(1, abs(expected)))
            }
        }
        for p in gray.parameters where !p.name.hasPrefix("classifier.4") && p.name != "backbone.0.0.weight" {
            #expect(p.value == state[p.name]?.values, "\(p.name)")
        }
    }

    /// A DeepLabV3 `state_dict` starts a DeepLabV3+ model's encoder (the backbone's tensors under smp's keys, the
    /// decoder left as initialised) and the reverse; the other head's tensors are skipped and said.
    @Test(arguments: [DeepLabConfiguration.Architecture.mobilenetV2, .resnet18])
    func otherDecodersStateDictGivesItsBackbone(_ architecture: DeepLabConfiguration.Architecture) throws {
        func model(_ decoder: DeepLabConfiguration.Decoder, seed: UInt64) throws -> DeepLabV3 {
            try DeepLabV3(
                DeepLabConfiguration(
                    architecture: architecture, decoder: decoder, classCount: 3, inputChannels: 1, outputStride: 16,
                    asppChannels: 16, widthMultiplier: 0.35, seed: seed))
        }
        for (from, to) in [(DeepLabConfiguration.Decoder.v3, DeepLabConfiguration.Decoder.v3plus), (.v3plus, .v3)] {
            let source = try model(from, seed: 1)
            DeterministicWeights.fill(source)
            let target = try model(to, seed: 2)
            let initial = target.parametersByName
                .mapValues(\.value)
            let state = Dictionary(
                uniqueKeysWithValues: source.parameters.map {
                    ($0.name, FloatTensor(shape: $0.shape, values: $0.value))
                })
            let notes = try target.load(stateDict: state, source: "\(from).safetensors")
            #expect(notes.contains { $0.contains("is a \(from) state_dict") && $0.contains("the head starts fresh") })
            let (own, theirs) = (target.configuration.backbonePrefix, source.configuration.backbonePrefix)
            var taken = 0
            for p in target.parameters {
                if p.name.hasPrefix(own) {
                    #expect(p.value == state[theirs + p.name.dropFirst(own.count)]?.values, "\(p.name)")
                    taken += 1
                } else {
                    #expect(p.value == initial[p.name], "\(p.name)")
                }
            }
            #expect(taken == source.parameters.filter { $0.name.hasPrefix(theirs) }.count)
        }
    }

    @Test func missingUnexpectedAndMisshapedKeysAreAllListed() throws {
        let configuration = DeepLabConfiguration(
            architecture: .mobilenetV2, classCount: 2, inputChannels: 1, outputStride: 16,
            asppChannels: 16, widthMultiplier: 0.5)
        let model = try DeepLabV3(configuration)
        var state = Dictionary(
            uniqueKeysWithValues: model.parameters.map {
                ($0.name, FloatTensor(shape: $0.shape, values: $0.value))
            })
        state["backbone.3.conv.1.1.running_var"] = nil
        state["backbone.99.weight"] = FloatTensor(shape: [1], values: [0])
        state["classifier.1.weight"] = FloatTensor(zeros: [16, 16, 1, 1])
        #expect {
            try model.load(stateDict: state, source: "w.safetensors")
        } throws: { error in
            guard case .mismatchedWeights(let file, let missing, let unexpected, let misshaped) = error as? DeepLabError
            else {
                return false
            }
            return file == "w.safetensors" && missing == ["backbone.3.conv.1.1.running_var"]
                && unexpected == ["backbone.99.weight"] && misshaped.count == 1
                && misshaped[0].hasPrefix("classifier.1.weight is [16, 16, 1, 1] in the file")
        }
    }

    @Test func checkpointRoundTripRestoresModelAndPreprocessing() throws {
        let folder = try TestSupport.temporaryFolder("deeplab-checkpoint")
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = DeepLabConfiguration(
            architecture: .mobilenetV2, classCount: 3, inputChannels: 1, outputStride: 16,
            atrousRates: [6, 12, 18], asppChannels: 16, auxiliaryHead: true,
            widthMultiplier: 0.5, seed: 3)
        let model = try DeepLabV3(configuration)
        DeterministicWeights.fill(model)
        let path = folder.appendingPathComponent("model.h5").path
        try DeepLabCheckpoint.save(model, preprocessing: .window(center: 40, width: 400), to: path) { file in
            try file.write([1.0, 2.0], shape: [2], to: "/history/train_loss")
        }
        let (loaded, preprocessing) = try DeepLabCheckpoint.load(path)
        #expect(loaded.configuration == configuration)
        #expect(preprocessing == .window(center: 40, width: 400))
        #expect(loaded.parameters.map(\.value) == model.parameters.map(\.value))
        #expect(try HDF5File.open(path).read("/history/train_loss", as: Double.self).values == [1, 2])
        let input = DeterministicWeights.input([1, 1, 37, 29])
        #expect(try loaded.forward(input, training: false) == model.forward(input, training: false))
    }

    @Test func fileWithoutConfigurationIsRejectedWithItsName() throws {
        let folder = try TestSupport.temporaryFolder("deeplab-checkpoint")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("not-a-model.h5").path
        try HDF5File.write(to: path) { try $0.write([Float(1)], shape: [1], to: "/image") }
        #expect(
            throws: DeepLabError.invalidCheckpoint(
                file: path, reason: "no 'configuration' attribute (was it written by slicelab train or segment?)")
        ) {
            _ = try DeepLabCheckpoint.load(path)
        }
    }
}
