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
}
