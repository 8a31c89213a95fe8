import DeepLab
import DeepLabTestSupport
import Foundation
import ImageFiles
import TestSupport
import Testing

/// `slicelab segment INPUT --model MODEL.h5 --out …` end to end, and sliding-window blending.
@Suite(.serialized) struct SegmentCommandTests {
    static func smallModel() throws -> DeepLabV3 {
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: 3, inputChannels: 1,
                outputStride: 16, atrousRates: [2, 4], asppChannels: 8,
                widthMultiplier: 0.35, seed: 1))
        DeterministicWeights.fill(model)
        return model
    }

    @Test func segmentWritesLabelsProbabilitiesAndOverlayThatMatchTheModel() throws {
        let folder = try TestSupport.temporaryFolder("deeplab-segment")
        defer { try? FileManager.default.removeItem(at: folder) }
        let model = try Self.smallModel()
        let modelPath = folder.appendingPathComponent("model.h5").path
        try DeepLabCheckpoint.save(model, preprocessing: .minMax, to: modelPath)
        let (rows, columns) = (45, 52)
        let samples = (0..<(rows * columns)).map { UInt8(($0 * 37 + ($0 / columns) * 11) % 251) }
        let input = folder.appendingPathComponent("in.png").path
        try PNGImage(rows: rows, columns: columns, channels: 1, samples: samples).write(to: input)
        let out = folder.appendingPathComponent("out.h5").path
        let overlay = folder.appendingPathComponent("overlay.png").path
        let result = try TestSupport.run(
            TestSupport.slicelabBinary,
            [
                "segment", input, "--model", modelPath, "--out", out, "--probabilities", "--overlay", overlay
            ])
        #expect(result.status == 0, "\(result.standardError)")

        let file = try HDF5File.open(out)
        let labels = try file.read("/labels", as: Int32.self)
        #expect(try file.elementType(of: "/labels") == .uint8)
        #expect(labels.shape == [1, rows, columns])
        let probabilities = try file.read("/probabilities", as: Float.self)
        #expect(probabilities.shape == [1, 3, rows, columns])

        var values = samples.map(Float.init)
        Preprocessing.minMax.apply(to: &values)
        let logits = try model.forward(FloatTensor(shape: [1, 1, rows, columns], values: values), training: false)
        #expect(labels.values == argmaxOverClasses(logits))
        let expected = softmaxOverClasses(logits)
        #expect(maxDifference(probabilities.values, expected.values).difference <= 1e-6)
        let picture = try PNGImage.read(overlay)
        #expect(picture.rows == rows && picture.columns == columns && picture.channels == 3)
    }

    @Test func unsupportedOutputIsAClearErrorNamingTheFile() throws {
        let folder = try TestSupport.temporaryFolder("deeplab-segment")
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("labels.txt").path
        let result = try TestSupport.run(
            TestSupport.slicelabBinary,
            [
                "segment", "in.png", "--model", "m.h5", "--out", out
            ])
        #expect(result.status == 1)
        #expect(
            result.standardError.contains(
                "\(out): unsupported output: expected .h5, .nii, .nii.gz, .seg.nrrd, .png or .dcm"))
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func slidingWindowKeepsSingleTileLogitsWhereOnlyOneTileCovers() throws {
        let model = try Self.smallModel()
        let (rows, columns) = (40, 50)
        let image = DeterministicWeights.input([1, 1, rows, columns])
        let window = SlidingWindow(tileSize: 24, overlap: 0.25)
        let blended = try window.logits(model, image)
        #expect(blended.shape == [1, 3, rows, columns])
        var tile = [Float](repeating: 0, count: 24 * 24)
        for y in 0..<24 { for x in 0..<24 { tile[y * 24 + x] = image.values[y * columns + x] } }
        let corner = try model.forward(FloatTensor(shape: [1, 1, 24, 24], values: tile), training: false)
        for k in 0..<3 {
            #expect(abs(blended.values[k * rows * columns] - corner.values[k * 24 * 24]) <= 1e-5)
        }
        // An image that fits one tile is a single forward pass.
        let whole = try SlidingWindow(tileSize: 64).logits(model, image)
        #expect(whole == (try model.forward(image, training: false)))
    }

    /// Every pixel of a batch of two images (tiles overlapping unevenly on both axes) is the Gaussian-weighted mean
    /// of the logits of the tiles that cover it (σ = tile / 8, weights at least 1e-4), each image's tiles its own.
    @Test func slidingWindowBlendsEveryPixelAsTheWeightedMeanOfItsTiles() throws {
        let model = try Self.smallModel()
        let (batch, rows, columns, size, k) = (2, 45, 37, 24, 3)
        let image = DeterministicWeights.input([batch, 1, rows, columns])
        let blended = try SlidingWindow(tileSize: size, overlap: 0.4).logits(model, image)
        #expect(blended.shape == [batch, k, rows, columns])
        func origins(_ extent: Int) -> [Int] {
            Array(stride(from: 0, to: extent - size, by: Int(Double(size) * 0.6))) + [extent - size]
        }
        var sum = [Double](repeating: 0, count: batch * k * rows * columns)
        var total = [Double](repeating: 0, count: rows * columns)
        let sigma = Double(size) / 8
        for y0 in origins(rows) {
            for x0 in origins(columns) {
                var tile = [Float](repeating: 0, count: batch * size * size)
                for b in 0..<batch {
                    for y in 0..<size {
                        for x in 0..<size {
                            tile[(b * size + y) * size + x] = image.values[(b * rows + y0 + y) * columns + x0 + x]
                        }
                    }
                }
                let out = try model.forward(FloatTensor(shape: [batch, 1, size, size], values: tile), training: false)
                for y in 0..<size {
                    for x in 0..<size {
                        let (dy, dx) = (Double(y) - Double(size - 1) / 2, Double(x) - Double(size - 1) / 2)
                        let g = max(exp(-(dy * dy + dx * dx) / (2 * sigma * sigma)), 1e-4)
                        let p = (y0 + y) * columns + x0 + x
                        total[p] += g
                        for plane in 0..<(batch * k) {
                            sum[plane * rows * columns + p] += g * Double(out.values[(plane * size + y) * size + x])
                        }
                    }
                }
            }
        }
        let expected = sum.indices.map { sum[$0] / total[$0 % (rows * columns)] }
        let largest = expected.map(abs).max() ?? 0
        let difference = zip(blended.values, expected).map { abs(Double($0) - $1) }.max() ?? .infinity
        #expect(largest > 0 && difference <= 1e-5 * largest, "max |Δ| \(difference) of \(largest)")
    }
}
