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
        let file = try HDF5File.open(DeterministicWeights.goldens.path)
        let json = try #require(try file.attribute("configuration", at: "/\(name)").stringValue)
        let configuration = try JSONDecoder().decode(DeepLabConfiguration.self, from: Data(json.utf8))
        let model = try DeepLabV3(configuration)

        // Same keys, order and shapes as torchvision's state_dict.
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
}
