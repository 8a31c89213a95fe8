import DeepLab
import DeepLabTestSupport
import Foundation
import TestSupport
import Testing

/// `DeepLabConfiguration.inputScale`: the model resamples its input by an integer factor before the backbone
/// and returns logits at the input's size.
@Suite struct InputScaleTests {
    static func model(scale: Int) throws -> DeepLabV3 {
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: 3, inputChannels: 1,
                outputStride: 16, atrousRates: [2, 4], asppChannels: 8,
                widthMultiplier: 0.35, seed: 1, inputScale: scale))
        DeterministicWeights.fill(model)
        return model
    }

    /// torch.nn.functional.interpolate(mode="bilinear", align_corners=False) along one axis: output sample `o`
    /// reads source coordinate (o + 0.5) · in / out − 0.5, clamped at 0, between its two neighbours.
    static func bilinear(_ plane: [Float], height: Int, width: Int, toHeight: Int, toWidth: Int) -> [Float] {
        func taps(_ o: Int, _ n: Int, _ m: Int) -> (Int, Int, Float) {
            let source = max(0, (Double(o) + 0.5) * Double(n) / Double(m) - 0.5)
            let low = min(Int(source), n - 1)
            return (low, min(low + 1, n - 1), Float(source - Double(low)))
        }
        var out = [Float](repeating: 0, count: toHeight * toWidth)
        for y in 0..<toHeight {
            let (y0, y1, fy) = taps(y, height, toHeight)
            for x in 0..<toWidth {
                let (x0, x1, fx) = taps(x, width, toWidth)
                let a: Float = plane[y0 * width + x0]
                let b: Float = plane[y0 * width + x1]
                let c: Float = plane[y1 * width + x0]
                let d: Float = plane[y1 * width + x1]
                let top: Float = a + (b - a) * fx
                let bottom: Float = c + (d - c) * fx
                out[y * toWidth + x] = top + (bottom - top) * fy
            }
        }
        return out
    }

    /// Scale 2 is the backbone on the input upsampled ×2 (PyTorch's bilinear, align_corners = False): its logits
    /// match the scale-1 model's on that upsampled input, resampled back to the input size. The model resamples
    /// its head's logits once where this reference resamples twice, so the two differ a little where a source
    /// sample falls between two output pixels; the mean absolute difference stays under 1 % of the logits' mean
    /// magnitude, while ignoring the scale (the scale-1 model on the input itself) is off by far more.
    @Test func scaleTwoIsTheBackboneOnTheUpsampledInput() throws {
        let (h, w) = (21, 26)
        let image = (0..<(h * w)).map { Float(($0 * 37 + ($0 / w) * 11) % 251) / 251 }
        let input = FloatTensor(shape: [1, 1, h, w], values: image)
        let scaled = try Self.model(scale: 2).forward(input, training: false)
        #expect(scaled.shape == [1, 3, h, w])

        let upsampled = Self.bilinear(image, height: h, width: w, toHeight: 2 * h, toWidth: 2 * w)
        let big = try Self.model(scale: 1).forward(
            FloatTensor(shape: [1, 1, 2 * h, 2 * w], values: upsampled),
            training: false)
        var reference: [Float] = []
        let plane = 4 * h * w
        for k in 0..<3 {
            let logits = Array(big.values[(k * plane)..<((k + 1) * plane)])
            reference += Self.bilinear(logits, height: 2 * h, width: 2 * w, toHeight: h, toWidth: w)
        }
        let unscaled = try Self.model(scale: 1).forward(input, training: false)
        func meanAbsoluteDifference(_ a: [Float], _ b: [Float]) -> Float {
            var sum: Float = 0
            for (x, y) in zip(a, b) { sum += abs(x - y) }
            return sum / Float(a.count)
        }
        let magnitude = meanAbsoluteDifference(scaled.values, [Float](repeating: 0, count: scaled.values.count))
        let error = meanAbsoluteDifference(scaled.values, reference)
        let ignoringTheScale = meanAbsoluteDifference(scaled.values, unscaled.values)
        #expect(error < 0.01 * magnitude, "mean |difference| \(error), mean |logit| \(magnitude)")
        #expect(ignoringTheScale > 10 * error, "without the scale \(ignoringTheScale), with it \(error)")
    }

    /// The scale travels with the checkpoint; checkpoints written before it existed load as scale 1.
    @Test func theScaleIsStoredAndDefaultsToOne() throws {
        let folder = try TestSupport.temporaryFolder("deeplab-input-scale")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("model.h5").path
        try DeepLabCheckpoint.save(Self.model(scale: 3), preprocessing: .minMax, to: path)
        #expect(try DeepLabCheckpoint.load(path).model.configuration.inputScale == 3)

        var json =
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.model(scale: 3).configuration))
            as! [String: Any]
        json["inputScale"] = nil
        let old = try JSONDecoder().decode(
            DeepLabConfiguration.self, from: JSONSerialization.data(withJSONObject: json))
        #expect(old.inputScale == 1)
        #expect(throws: DeepLabError.self) {
            try DeepLabV3(DeepLabConfiguration(architecture: .mobilenetV2, classCount: 2, inputScale: 5))
        }
    }
}
