import DeepLab
import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import XCTest

/// `slicelab export --format onnx` end to end: the exported file loads in ONNX Runtime (CPU) and OpenVINO (CPU,
/// f32) and gives SliceLab's logits (`segment --model … --raw-input … --logits …`) on the same input within
/// 1e-4 × max|logit|, for every architecture, odd sizes and batch 2; bad input gets one line and no file.
final class ONNXExportTests: ExportTestCase {
    /// The consumers' tolerance: both run float32 convolutions in other summation orders than oneDNN's.
    static let relativeTolerance = 1e-4

    // MARK: - Parity with ONNX Runtime and OpenVINO

    func testResNet18GrayOutputStride8MultiGridMatchesRuntimes() throws {
        try checkParity(
            DeepLabConfiguration(
                architecture: .resnet18, classCount: 3, inputChannels: 1,
                outputStride: 8, atrousRates: [3, 6, 9], asppChannels: 16,
                multiGrid: [1, 2, 4], seed: 1),
            batch: 2, height: 97, width: 131)
    }

    func testResNet34ColorOutputStride16InputScale2MatchesRuntimes() throws {
        try checkParity(
            DeepLabConfiguration(
                architecture: .resnet34, classCount: 4, inputChannels: 3,
                outputStride: 16, atrousRates: [6, 12, 18], asppChannels: 32,
                seed: 2, inputScale: 2),
            batch: 2, height: 45, width: 37)
    }

    func testResNet50ColorWithAuxiliaryHeadMatchesRuntimes() throws {
        try checkParity(
            DeepLabConfiguration(
                architecture: .resnet50, classCount: 2, inputChannels: 3,
                outputStride: 16, atrousRates: [6, 12, 18], asppChannels: 32,
                auxiliaryHead: true, seed: 3),
            batch: 2, height: 33, width: 41)
    }

    func testResNet101GrayOutputStride8MatchesRuntimes() throws {
        try checkParity(
            DeepLabConfiguration(
                architecture: .resnet101, classCount: 3, inputChannels: 1,
                outputStride: 8, atrousRates: [12, 24, 36], asppChannels: 16, seed: 4),
            batch: 2, height: 33, width: 41)
    }

    /// DeepLabV3+ at sizes smp would refuse (not multiples of 16): the decoder's resize to the low-level
    /// features' size and its aligned corners, as ONNX `Resize` (`align_corners`) computes them.
    func testDeepLabV3PlusResNet18GrayOddSizeMatchesRuntimes() throws {
        try checkParity(
            DeepLabConfiguration(
                architecture: .resnet18, decoder: .v3plus, classCount: 3, inputChannels: 1,
                outputStride: 16, atrousRates: [2, 4, 6], asppChannels: 16, seed: 7),
            batch: 2, height: 45, width: 37)
    }

    func testDeepLabV3PlusMobileNetV2OutputStride8InputScale2MatchesRuntimes() throws {
        try checkParity(
            DeepLabConfiguration(
                architecture: .mobilenetV2, decoder: .v3plus, classCount: 4, inputChannels: 3,
                outputStride: 8, atrousRates: [2, 4, 6], asppChannels: 24, auxiliaryHead: true,
                widthMultiplier: 0.35, seed: 8, inputScale: 2),
            batch: 1, height: 50, width: 63)
    }

    func testMobileNetV2InputScale3MatchesRuntimes() throws {
        try checkParity(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: 5, inputChannels: 3,
                outputStride: 8, atrousRates: [2, 4, 6], asppChannels: 24,
                widthMultiplier: 0.35, seed: 5, inputScale: 3),
            batch: 2, height: 97, width: 131)
    }

    func testMobileNetV2GrayOutputStride16MatchesRuntimes() throws {
        try checkParity(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: 2, inputChannels: 1,
                outputStride: 16, atrousRates: [6, 12, 18], asppChannels: 16,
                widthMultiplier: 0.5, seed: 6),
            batch: 1, height: 65, width: 49)
    }

    // MARK: - Bad input

    func testNotACheckpointIsRefusedWithOneLineAndNoFile() throws {
        let text = folder.appendingPathComponent("notes.h5")
        try Data("not HDF5".utf8).write(to: text)
        let plain = folder.appendingPathComponent("plain.h5").path
        try HDF5File.write(to: plain) { try $0.write([Float(1)], shape: [1], to: "/image") }
        for source in [text.path, plain] {
            let out = folder.appendingPathComponent("out.onnx").path
            let result = try TestSupport.slicelab(["export", source, "--format", "onnx", "--out", out])
            XCTAssertEqual(result.status, 1, result.standardError)
            XCTAssertEqual(result.standardError.split(separator: "\n").count, 1, result.standardError)
            XCTAssertTrue(result.standardError.contains(source), result.standardError)
            XCTAssertFalse(FileManager.default.fileExists(atPath: out))
        }
    }

    func testInt8CheckpointIsRefusedWithTheReason() throws {
        let path = folder.appendingPathComponent("int8.h5").path
        try HDF5File.write(to: path) { file in
            try file.setAttribute("format", .string(DeepLabCheckpoint.format))
            try file.write([UInt8](repeating: 1, count: 4), shape: [4], to: "/parameters/backbone.conv1.weight")
        }
        let out = folder.appendingPathComponent("int8.onnx").path
        let result = try TestSupport.slicelab(["export", path, "--format", "onnx", "--out", out])
        XCTAssertEqual(result.status, 1, result.standardError)
        XCTAssertTrue(result.standardError.contains("int8"), result.standardError)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out))
    }

    func testUnknownFormatIsAUsageError() throws {
        let result = try TestSupport.slicelab(["export", "model.h5", "--format", "tflite", "--out", "x"])
        XCTAssertEqual(result.status, 2, result.standardError)
        XCTAssertEqual(result.standardError.split(separator: "\n").count, 1, result.standardError)
    }

    // MARK: - Helpers

    /// Exports a model of `configuration` and compares SliceLab's logits with both runtimes'.
    private func checkParity(
        _ configuration: DeepLabConfiguration, batch: Int, height: Int, width: Int,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let checkpoint = try ExportFixtures.checkpoint(configuration, in: folder)
        let c = configuration.inputChannels
        let input = try ExportFixtures.input(
            batch: batch, channels: c, height: height, width: width,
            seed: configuration.seed, in: folder)
        let onnx = folder.appendingPathComponent("model.onnx").path
        let export = try TestSupport.slicelab(["export", checkpoint, "--format", "onnx", "--out", onnx])
        XCTAssertEqual(export.status, 0, export.standardError, file: file, line: line)
        let logits = try ExportFixtures.logits(checkpoint: checkpoint, input: input, in: folder)
        let report = try ExportFixtures.runScript("onnx_parity.py", [onnx, input, logits])
        let k = configuration.classCount
        XCTAssertEqual(report["logits_shape"] as? [Int], [batch, k, height, width], file: file, line: line)
        XCTAssertEqual(report["labels_shape"] as? [Int], [batch, height, width], file: file, line: line)
        XCTAssertEqual(report["labels_dtype"] as? String, "int64", file: file, line: line)
        XCTAssertEqual(report["labels_agree"] as? Double, 1, file: file, line: line)
        for runtime in ["ort_ratio", "openvino_ratio"] {
            let ratio = try XCTUnwrap(report[runtime] as? Double, file: file, line: line)
            XCTAssertLessThanOrEqual(ratio, Self.relativeTolerance, runtime, file: file, line: line)
        }
        let metadata = try XCTUnwrap(report["metadata"] as? [String: String], file: file, line: line)
        XCTAssertEqual(
            metadata["slicelab.preprocessing"], Preprocessing.percentile(low: 1, high: 99).json,
            file: file, line: line)
        XCTAssertEqual(
            metadata["slicelab.class_names"].map { $0.hasPrefix("[\"background\"") }, true,
            file: file, line: line)
        XCTAssertEqual(
            metadata["slicelab.tiling"]?.hasPrefix("segment tiles as nnU-Net does"), true, file: file, line: line)
    }
}
