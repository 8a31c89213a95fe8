import DeepLab
import Foundation
import ImageFiles
import TestSupport

/// The deterministic weights and inputs that Datasets/goldens/deeplab_goldens.py feeds torchvision: uniforms in
/// [-1, 1) from a SplitMix64 hash of (flat index, salt), scaled by each tensor's role. Exact integer arithmetic,
/// so both sides produce the same Float32 values bit for bit.
package enum DeterministicWeights {
    package static func keyHash(_ key: String) -> UInt64 {
        key.utf8.enumerated().reduce(UInt64(0)) { $0 &+ UInt64($1.offset + 1) &* UInt64($1.element) }
    }

    package static func uniform(_ count: Int, salt: UInt64) -> [Double] {
        var values = [Double](repeating: 0, count: count)
        let base = salt &* 0x9E37_79B9_7F4A_7C15
        values.withUnsafeMutableBufferPointer { buffer in
            for i in 0..<count {
                var z = UInt64(i) &+ base
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z = z ^ (z >> 31)
                buffer[i] = Double(z >> 11) * 0x1p-53 * 2 - 1
            }
        }
        return values
    }

    package static func value(key: String, shape: [Int]) -> [Float] {
        let n = shape.reduce(1, *)
        if key.hasSuffix("num_batches_tracked") { return [Float](repeating: 0, count: n) }
        let u = uniform(n, salt: keyHash(key))
        let (offset, scale): (Double, Double)
        if key.hasSuffix("running_var") {
            (offset, scale) = (1, 0.5)
        } else if key.hasSuffix("running_mean") {
            (offset, scale) = (0, 0.2)
        } else if shape.count == 4 {
            (offset, scale) = (0, (6.0 / Double(shape[1] * shape[2] * shape[3])).squareRoot())
        } else if key.hasSuffix("weight") {
            (offset, scale) = (1, 0.25)
        } else {
            (offset, scale) = (0, 0.1)
        }
        var values = [Float](repeating: 0, count: n)
        u.withUnsafeBufferPointer { source in
            values.withUnsafeMutableBufferPointer { target in
                for i in 0..<n { target[i] = Float(offset + scale * source[i]) }
            }
        }
        return values
    }

    package static func input(_ shape: [Int]) -> FloatTensor {
        FloatTensor(shape: shape, values: uniform(shape.reduce(1, *), salt: 12345).map { Float($0) })
    }

    /// Fills every parameter and buffer of `network`.
    package static func fill(_ network: SegmentationNetwork) {
        for p in network.parameters {
            p.value = value(key: p.name, shape: p.shape)
            p.markUpdated()
        }
    }

    package static var goldens: URL { fixture("deeplab_goldens.h5") }

    /// segmentation-models-pytorch's DeepLabV3+ logits (Datasets/goldens/deeplabv3plus_goldens.py).
    package static var v3plusGoldens: URL { fixture("deeplabv3plus_goldens.h5") }

    private static func fixture(_ name: String) -> URL {
        TestSupport.packageRoot.appendingPathComponent("Tests/DeepLabTests/Fixtures/" + name)
    }
}

/// Largest |a − b| and largest |b|.
package func maxDifference(_ a: [Float], _ b: [Float]) -> (difference: Float, scale: Float) {
    var d: Float = 0
    var s: Float = 0
    for i in 0..<min(a.count, b.count) {
        d = max(d, abs(a[i] - b[i]))
        s = max(s, abs(b[i]))
    }
    return (d, s)
}
