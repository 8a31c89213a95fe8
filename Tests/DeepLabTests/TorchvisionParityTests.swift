import DeepLab
import DeepLabTestSupport
import Foundation
import ImageFiles
import Testing

/// Eval-mode logits against torchvision's, for every architecture (fixtures from Datasets/goldens/deeplab_goldens.py).
/// Agreement: max|Δ| ≤ 1e-4 × max|logit| in float32 (issue #4).
@Suite(.serialized) struct TorchvisionParityTests {
    static let cases = [
        "resnet18_c1_97x131", "resnet18_c3_os16", "resnet34_c3_45x37", "resnet50_c3_aux",
        "resnet101_c1_33x41", "mobilenet_v2_c3_aux", "mobilenet_v2_c1_w05_os16"
    ]

    @Test(arguments: cases)
    func logitsMatchTorchvisionInEvalMode(_ name: String) throws {
        try expectPeerLogits(DeterministicWeights.goldens, name)
    }
}

/// DeepLabV3+ against segmentation-models-pytorch's `DeepLabV3Plus` (fixtures from
/// Datasets/goldens/deeplabv3plus_goldens.py): smp's keys, order and shapes, and its eval-mode logits within the
/// bound torchvision's are held to (issue #37).
@Suite(.serialized) struct DeepLabV3PlusParityTests {
    static let cases = [
        "v3plus_resnet18_c1", "v3plus_resnet50_c3_os8", "v3plus_mobilenet_v2_c1", "v3plus_mobilenet_v2_c3_os8"
    ]

    @Test(arguments: cases)
    func logitsMatchSegmentationModelsPyTorch(_ name: String) throws {
        try expectPeerLogits(DeterministicWeights.v3plusGoldens, name)
    }
}

/// Builds the model a golden group's configuration names, checks its state_dict keys and shapes against the
/// peer's, fills the deterministic weights and compares eval-mode logits (and auxiliary logits when present).
private func expectPeerLogits(_ goldens: URL, _ name: String) throws {
    let file = try HDF5File.open(goldens.path)
    let json = try #require(try file.attribute("configuration", at: "/\(name)").stringValue)
    let configuration = try JSONDecoder().decode(DeepLabConfiguration.self, from: Data(json.utf8))
    let model = try DeepLabV3(configuration)

    // Same keys, order and shapes as the peer's state_dict.
    let keys = try file.readStrings("/\(name)/keys")
    let ranks = try file.read("/\(name)/key_ranks", as: Int64.self).values
    var flat = try file.read("/\(name)/key_shapes", as: Int64.self).values.map(Int.init)[...]
    let shapes: [[Int]] = ranks.map { r in
        let s = Array(flat.prefix(Int(r)))
        flat = flat.dropFirst(Int(r))
        return s
    }
    #expect(model.parameters.map(\.name) == keys)
    #expect(model.parameters.map(\.shape) == shapes)

    DeterministicWeights.fill(model)
    let shape = try #require(try file.attribute("input_shape", at: "/\(name)").doubleValues).map { Int($0) }
    let logits = try model.forward(DeterministicWeights.input(shape), training: false)
    let expected = try file.read("/\(name)/logits", as: Float.self)
    #expect(logits.shape == expected.shape)
    let (difference, scale) = maxDifference(logits.values, expected.values)
    #expect(difference <= 1e-4 * scale, "\(name): max|Δ| \(difference), max|logit| \(scale)")
    if configuration.auxiliaryHead {
        let aux = try #require(model.auxiliaryLogits)
        let expectedAux = try file.read("/\(name)/aux_logits", as: Float.self)
        let (d, s) = maxDifference(aux.values, expectedAux.values)
        #expect(d <= 1e-4 * s, "\(name) auxiliaryHead: max|Δ| \(d), max|logit| \(s)")
    }
}
