import Foundation
import ImageFiles
import SliceLabDatasets
import SliceLabIO
import SliceLabInference
import SliceLabKit
import TestSupport
import Testing

@testable import DeepLab

/// `slicelab quantize` then `slicelab segment` end to end on the bundled mni-brain model and set, and the
/// one-line errors of the int8 path.
@Suite(.serialized) struct QuantizeCommandTests {
    static let demo = TestSupport.packageRoot.appendingPathComponent("Sources/SliceLabKit/Resources/Demo")
    static let model = demo.appendingPathComponent("models/mni-brain.h5").path
    static let set = demo.appendingPathComponent("mni-brain").path
    static let testImage = demo.appendingPathComponent("mni-brain/images/axial075.dcm").path

    @Test func quantizeThenSegmentAgreesWithFloat32OnNinetyNinePercentOfPixels() throws {
        let folder = try TestSupport.temporaryFolder("quantize-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let int8Model = folder.appendingPathComponent("mni-brain-int8.h5").path
        let quantize = try TestSupport.run(
            TestSupport.slicelabBinary,
            [
                "quantize", Self.model, "--calibrate", Self.set, "--out", int8Model, "--threads", "2"
            ])
        #expect(quantize.status == 0, "\(quantize.standardError)")

        let file = try HDF5File.open(int8Model)
        #expect(
            try file.attribute("method", at: "/quantization").stringValue
                == QuantizeWorkflow.defaultMethod.rawValue)
        #expect(try file.attribute("calibration_set", at: "/quantization").stringValue == "mni-brain")
        #expect(try file.attribute("split", at: "/quantization").stringValue == "train")
        #expect(try file.attribute("cases", at: "/quantization").doubleValues == [4])
        #expect(try file.attribute("slices", at: "/quantization").doubleValues == [4])
        // Float32 stay the ASPP pooling branch's 1 × 1 convolution and the logits' convolution, named as the
        // bundled model's decoder names them (torchvision's DeepLabV3 head or smp's DeepLabV3+).
        let v3plus = try DeepLabCheckpoint.load(Self.model).0.configuration.decoder == .v3plus
        let (aspp, encoder) = v3plus ? ("decoder.aspp.0", "encoder.features") : ("classifier.0", "backbone")
        #expect(
            try file.attribute("float_units", at: "/quantization")
                == .strings(["\(aspp).convs.4.1", v3plus ? "segmentation_head.0" : "classifier.4"]))
        #expect(file.exists("/quantization/\(encoder).0.0/weight_scales"))

        var labels: [Precision: [Int32]] = [:]
        for (precision, model) in [(Precision.fp32, Self.model), (.int8, int8Model)] {
            let out = folder.appendingPathComponent("\(precision.rawValue).h5").path
            let run = try TestSupport.run(
                TestSupport.slicelabBinary,
                [
                    "segment", Self.testImage, "--model", model, "--out", out, "--precision", precision.rawValue,
                    "--threads", "2"
                ])
            #expect(run.status == 0, "\(run.standardError)")
            labels[precision] = try HDF5File.open(out).read("/labels", as: Int32.self).values
        }
        let fp32 = try #require(labels[.fp32])
        let int8 = try #require(labels[.int8])
        #expect(fp32.count == int8.count && !fp32.isEmpty)
        let agreement = Double(zip(fp32, int8).filter { $0 == $1 }.count) / Double(fp32.count)
        #expect(agreement >= 0.99, "int8 labels agree with float32 on \(agreement * 100) % of pixels")
        #expect(Set(int8).count == 3)

        // A quantised checkpoint is refused in fp32 and bf16, with the reason, and nothing is written.
        for precision in ["fp32", "bf16"] {
            let out = folder.appendingPathComponent("refused-\(precision).h5").path
            let run = try TestSupport.run(
                TestSupport.slicelabBinary,
                [
                    "segment", Self.testImage, "--model", int8Model, "--out", out, "--precision", precision
                ])
            #expect(run.status == 2)
            let lines = run.standardError.split(separator: "\n")
            #expect(lines.count == 1)
            #expect(lines.first?.contains("is an int8 (quantised) checkpoint and runs in int8 only") == true)
            #expect(!FileManager.default.fileExists(atPath: out))
        }
        // And a float32 one in int8.
        let refused = try TestSupport.run(
            TestSupport.slicelabBinary,
            [
                "compare", Self.set, "--model", Self.model, "--out", folder.appendingPathComponent("r.h5").path,
                "--precision", "int8"
            ])
        #expect(refused.status == 2)
        #expect(refused.standardError.contains("is a float32 checkpoint; make an int8 one with 'slicelab quantize'"))
    }

    @Test func anEmptyCalibrationSplitIsAOneLineError() throws {
        let folder = try TestSupport.temporaryFolder("quantize-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("int8.h5").path
        let run = try TestSupport.run(
            TestSupport.slicelabBinary,
            [
                "quantize", Self.model, "--calibrate", Self.set, "--split", "val", "--out", out
            ])
        #expect(run.status == 1)
        let lines = run.standardError.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(
            lines.first?.contains("the calibration split 'val' has no cases (splits with cases: test, train)")
                == true)
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// Entropy calibration of the bundled model on its training slices (issue #40): no unit's threshold clips more
    /// than the budget of its non-zero values. Without the budget the divergence clipped the depthwise ReLU6
    /// outputs at 1.0–1.5 (2–4 % of the values), which 8-bit (VNNI) inputs honour: 88.85 % of the labels kept.
    @Test func entropyThresholdsOfTheBundledModelClipAtMostTheBudget() throws {
        let (model, preprocessing) = try DeepLabCheckpoint.load(Self.model)
        let set = try LabeledSet.open(Self.set)
        let calibrator = try Calibrator(model: model, method: .entropy)
        for name in set.cases(in: "train") {
            let image = ScanImage(try set.load(name))
            for frame in 0..<image.frames {
                try calibrator.observe(
                    image.networkInput(
                        frame: frame, channels: model.configuration.inputChannels, preprocessing: preprocessing))
            }
        }
        #expect(calibrator.statistics.count > 40)
        for (unit, s) in calibrator.statistics where s.maximumMagnitude > 0 {
            let threshold = Calibrator.threshold(s, method: .entropy, levels: s.minimum >= 0 ? 256 : 128)
            let width = s.range / Float(Calibrator.binCount)
            let nonZero = s.histogram.reduce(0, +) - s.zeroCount
            let clipped = s.histogram.enumerated().filter { Float($0.offset) * width >= threshold }.map(\.element)
                .reduce(0, +)
            #expect(clipped <= 0.001 * nonZero + 1, "\(unit): threshold \(threshold) clips \(clipped / nonZero)")
        }
    }
}
