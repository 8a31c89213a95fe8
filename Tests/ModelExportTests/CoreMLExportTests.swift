import DeepLab
import Foundation
import TestSupport
import XCTest

/// `slicelab export --format coreml`: coremltools (on Linux it saves and loads packages but cannot predict) loads
/// the package; its interface is Apple's DeepLabV3 one, and it has one convolution per ONNX convolution.
final class CoreMLExportTests: ExportTestCase {
    private func export(
        _ checkpoint: String, to package: String, size: String? = nil,
        python: String = TestSupport.python
    ) throws -> TestSupport.ProcessResult {
        try TestSupport.run(
            TestSupport.slicelabBinary,
            ["export", checkpoint, "--format", "coreml", "--out", package]
                + (size.map { ["--size", $0] } ?? []),
            environment: ["SLICELAB_PYTHON": python])
    }

    func testPackageHasAppleDeepLabInterfaceAndOneConvolutionPerONNXConvolution() throws {
        let cases: [(DeepLabConfiguration, String?, [Int], String)] = [
            (
                DeepLabConfiguration(
                    architecture: .mobilenetV2, classCount: 3, inputChannels: 1, asppChannels: 16,
                    widthMultiplier: 0.35, seed: 1, inputScale: 2), nil, [513, 513], "GRAYSCALE"
            ),
            (
                DeepLabConfiguration(
                    architecture: .resnet18, classCount: 4, inputChannels: 3, outputStride: 16,
                    atrousRates: [6, 12, 18], asppChannels: 16, seed: 2), "97,131", [97, 131], "RGB"
            ),
            (
                DeepLabConfiguration(
                    architecture: .mobilenetV2, decoder: .v3plus, classCount: 2, inputChannels: 1,
                    outputStride: 16, asppChannels: 16, widthMultiplier: 0.35, seed: 3), "96,80", [96, 80],
                "GRAYSCALE"
            )
        ]
        for (configuration, size, expected, color) in cases {
            let checkpoint = try ExportFixtures.checkpoint(configuration, in: folder)
            let package = folder.appendingPathComponent("DeepLab.mlpackage").path
            let result = try export(checkpoint, to: package, size: size)
            XCTAssertEqual(result.status, 0, result.standardError)
            let onnx = folder.appendingPathComponent("model.onnx").path
            XCTAssertEqual(
                try TestSupport.slicelab(["export", checkpoint, "--format", "onnx", "--out", onnx]).status, 0)
            let onnxConvolutions = try ExportFixtures.runScript("onnx_ops.py", [onnx])["Conv"] as? Int
            let spec = try ExportFixtures.runScript("coreml_inspect.py", [package])
            let inputs = try XCTUnwrap(spec["inputs"] as? [[String: Any]])
            XCTAssertEqual(inputs.count, 1)
            XCTAssertEqual(inputs.first?["name"] as? String, "image")
            XCTAssertEqual(inputs.first?["type"] as? String, "imageType")
            XCTAssertEqual(inputs.first?["height"] as? Int, expected[0])
            XCTAssertEqual(inputs.first?["width"] as? Int, expected[1])
            XCTAssertEqual(inputs.first?["color"] as? String, color)
            let outputs = try XCTUnwrap(spec["outputs"] as? [[String: Any]])
            XCTAssertEqual(outputs.count, 1)
            XCTAssertEqual(outputs.first?["name"] as? String, "semanticPredictions")
            XCTAssertEqual(outputs.first?["type"] as? String, "INT32")
            XCTAssertEqual(outputs.first?["shape"] as? [Int], expected)
            let ops = try XCTUnwrap(spec["ops"] as? [String: Int])
            XCTAssertNotNil(onnxConvolutions)
            XCTAssertEqual(ops["conv"], onnxConvolutions)
            let metadata = spec["metadata"] as? [String: String]
            XCTAssertEqual(metadata?["slicelab.preprocessing"], Preprocessing.percentile(low: 1, high: 99).json)
            XCTAssertEqual(
                metadata?["slicelab.coreml_input"],
                "image pixels scaled by 1/255; apply the percentile normalisation to the image first")
        }
    }

    /// Labels of the Core ML package (float16 on the device's compute units) against ONNX Runtime's on the same
    /// image: at least 99.9 % of pixels agree. Core ML predicts only on macOS; elsewhere this says so and skips.
    func testPredictionsAgreeWithONNXRuntimeOnMacOS() throws {
        #if !os(macOS)
            throw XCTSkip(
                "Core ML predicts only on macOS (coremltools saves and loads packages on Linux, but has no "
                    + "runtime there); this parity check runs on a Mac")
        #else
            let checkpoint = try ExportFixtures.checkpoint(
                DeepLabConfiguration(
                    architecture: .resnet18, classCount: 4, inputChannels: 3, outputStride: 16,
                    atrousRates: [6, 12, 18], asppChannels: 16, seed: 3), in: folder)
            let package = folder.appendingPathComponent("DeepLab.mlpackage").path
            let onnx = folder.appendingPathComponent("model.onnx").path
            XCTAssertEqual(try export(checkpoint, to: package, size: "97,131").status, 0)
            XCTAssertEqual(
                try TestSupport.slicelab(["export", checkpoint, "--format", "onnx", "--out", onnx]).status, 0)
            let result = try ExportFixtures.runScript("coreml_parity.py", [package, onnx, "97", "131", "3"])
            XCTAssertGreaterThanOrEqual(try XCTUnwrap(result["agreement"] as? Double), 0.999)
        #endif
    }

    func testMissingPythonPackageIsNamedAndNothingIsWritten() throws {
        let checkpoint = try ExportFixtures.checkpoint(
            DeepLabConfiguration(architecture: .mobilenetV2, classCount: 2, asppChannels: 8, widthMultiplier: 0.35),
            in: folder)
        // The system Python has neither coremltools nor onnx.
        let package = folder.appendingPathComponent("Missing.mlpackage").path
        let result = try export(checkpoint, to: package, python: "/usr/bin/python3")
        XCTAssertEqual(result.status, 1, result.standardError)
        XCTAssertTrue(result.standardError.contains("pip install coremltools onnx"), result.standardError)
        XCTAssertEqual(result.standardError.split(separator: "\n").count, 1, result.standardError)
        XCTAssertFalse(FileManager.default.fileExists(atPath: package))
        let wrongEnding = try export(checkpoint, to: folder.appendingPathComponent("x.onnx").path)
        XCTAssertEqual(wrongEnding.status, 1, wrongEnding.standardError)
        XCTAssertTrue(wrongEnding.standardError.contains(".mlpackage"), wrongEnding.standardError)
    }
}
