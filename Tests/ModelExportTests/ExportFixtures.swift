import DeepLab
import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import XCTest

/// Small checkpoints, inputs and SliceLab's own logits for the export tests, made in the test.
enum ExportFixtures {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Saves a model of `configuration` to `folder/model.h5`, with batch-norm statistics and affine parameters
    /// drawn away from their initial values so that folding (ONNX) and un-folded buffers (torchvision) matter.
    static func checkpoint(
        _ configuration: DeepLabConfiguration, in folder: URL,
        preprocessing: Preprocessing = .percentile(low: 1, high: 99)
    ) throws -> String {
        let model = try DeepLabV3(configuration)
        var generator = SeededGenerator(seed: configuration.seed &+ 100)
        for p in model.parameters where p.shape.count == 1 && !p.name.hasPrefix("classifier.4") {
            let range: ClosedRange<Double>
            if p.name.hasSuffix("running_var") {
                range = 0.5...1.5
            } else if p.name.hasSuffix("running_mean") || p.name.hasSuffix(".bias") {
                range = -0.2...0.2
            } else if p.name.hasSuffix(".weight") {
                range = 0.7...1.3
            } else {
                continue
            }
            p.value = p.value.map { _ in Float(generator.uniform(range)) }
            p.markUpdated()
        }
        let path = folder.appendingPathComponent("model.h5").path
        try DeepLabCheckpoint.save(model, preprocessing: preprocessing, to: path)
        return path
    }

    /// `folder/input.h5` with `/image` [batch, channels, height, width] of standard normal values.
    static func input(batch: Int, channels: Int, height: Int, width: Int, seed: UInt64, in folder: URL) throws
        -> String
    {
        var generator = SeededGenerator(seed: seed)
        let path = folder.appendingPathComponent("input.h5").path
        let values = (0..<(batch * channels * height * width)).map { _ in Float(generator.normal()) }
        try HDF5File.write(to: path) { try $0.write(values, shape: [batch, channels, height, width], to: "/image") }
        return path
    }

    /// SliceLab's logits of `input` (`segment --model … --raw-input … --logits …`) in `folder/logits.h5`.
    static func logits(checkpoint: String, input: String, in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("logits.h5").path
        let result = try TestSupport.slicelab([
            "segment", "--model", checkpoint, "--raw-input", input,
            "--logits", path
        ])
        guard result.status == 0 else { throw Failure(description: "segment: \(result.standardError)") }
        return path
    }

    /// Runs a script of `Fixtures/` with `python` and decodes the JSON object it prints.
    static func runScript(_ name: String, python: String = TestSupport.python, _ arguments: [String]) throws
        -> [String: Any]
    {
        let script = TestSupport.packageRoot.appendingPathComponent("Tests/ModelExportTests/Fixtures/\(name)")
        let run = try TestSupport.run(python, [script.path] + arguments)
        guard run.status == 0 else { throw Failure(description: "\(name): \(run.standardError)") }
        print("\(name): \(run.standardOutput)")
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any])
    }
}

/// A test case with a fresh temporary folder per test, removed afterwards.
class ExportTestCase: XCTestCase {
    var folder: URL!

    override func setUpWithError() throws {
        folder = try TestSupport.temporaryFolder("slicelab-export")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }
}
