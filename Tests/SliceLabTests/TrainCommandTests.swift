import DeepLab
import Foundation
import ImageFiles
import TestSupport
import Testing

/// `slicelab train` end to end: the set is validated before anything else, errors are one line naming the
/// case, and the engine's DeepLabV3 trains and writes a model file.
struct TrainCommandTests {
    @Test func invalidSetIsOneErrorLineNamingTheCase() throws {
        let folder = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 2, validationCases: 1, size: 16)
        try FileManager.default.removeItem(at: folder.appendingPathComponent("labels/toy001.png"))
        let result = try TestSupport.slicelab([
            "train", folder.path, "--arch", "deeplabv3_resnet18", "--num-classes", "3",
            "--out", folder.appendingPathComponent("m.h5").path
        ])
        #expect(result.status == 1)
        #expect(result.standardError.split(separator: "\n").count == 1)
        #expect(result.standardError.contains("case toy001") && result.standardError.contains("unpaired image"))
    }

    @Test func classCountMustMatchTheSet() throws {
        let folder = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 2, validationCases: 1, size: 16)
        let result = try TestSupport.slicelab([
            "train", folder.path, "--arch", "deeplabv3_resnet18", "--num-classes", "4",
            "--out", folder.appendingPathComponent("m.h5").path
        ])
        #expect(result.status == 1 && result.standardError.contains("lists 3 classes"))
    }

    /// Two steps of the real DeepLabV3 write a model file the engine loads (with the history beside it); a
    /// second run starts from it with `--init` for another class count, which re-initialises the classifier.
    @Test func trainsTheEngineAndStartsAnotherRunFromItsCheckpoint() throws {
        let folder = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 2, validationCases: 1, size: 32)
        let out = folder.appendingPathComponent("m.h5").path
        let result = try TestSupport.slicelab([
            "train", folder.path, "--arch", "deeplabv3_mobilenet_v2",
            "--num-classes", "3", "--steps", "2", "--batch", "2", "--crop", "32",
            "--out", out
        ])
        #expect(result.status == 0, "\(result.standardError)")
        let last = try HDF5File.open(folder.appendingPathComponent("m.last.h5").path)
        #expect(try last.shape(of: "/history/train_loss") == [2])
        let file = try HDF5File.open(out)
        #expect(try file.attribute("format").stringValue == "slicelab-deeplabv3")
        // The set's class names travel with the model (a DICOM SEG written by `segment` names its segments so).
        #expect(try file.attribute("class_names") == .strings(["background", "disc", "square"]))
        let (model, preprocessing) = try DeepLabCheckpoint.load(out)
        #expect(model.configuration.classCount == 3 && preprocessing == .window(center: 127.5, width: 255))

        let other = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: other) }
        try TrainToySet.write(to: other, trainCases: 2, validationCases: 1, size: 32)
        var description = try String(contentsOf: other.appendingPathComponent("dataset.json"), encoding: .utf8)
        description = description.replacingOccurrences(of: #""square"]"#, with: #""square", "unused"]"#)
        try description.write(to: other.appendingPathComponent("dataset.json"), atomically: true, encoding: .utf8)
        let second = try TestSupport.slicelab([
            "train", other.path, "--arch", "deeplabv3_mobilenet_v2",
            "--num-classes", "4", "--steps", "1", "--batch", "2", "--crop", "32",
            "--init", out, "--out", other.appendingPathComponent("n.h5").path
        ])
        #expect(second.status == 0, "\(second.standardError)")
        #expect(second.standardError.contains("init: "), "\(second.standardError)")
    }

    /// `--output-stride 16 --aspp-channels 16` reach the network (they were once silently dropped): the model
    /// file's configuration says stride 16 with rates 6/12/18 and width 16, the ASPP and head parameters have
    /// width 16, and the file rebuilds that model.
    @Test func outputStrideAndASPPChannelsReachTheTrainedModel() throws {
        let folder = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 2, validationCases: 1, size: 32)
        let out = folder.appendingPathComponent("m.h5").path
        let result = try TestSupport.slicelab([
            "train", folder.path, "--arch", "deeplabv3_resnet18", "--num-classes", "3",
            "--steps", "1", "--batch", "2", "--crop", "32", "--output-stride", "16",
            "--aspp-channels", "16", "--decoder", "v3", "--out", out
        ])
        #expect(result.status == 0, "\(result.standardError)")
        let file = try HDF5File.open(out)
        let json = try #require(try file.attribute("configuration").stringValue)
        let stored = try JSONDecoder().decode(DeepLabConfiguration.self, from: Data(json.utf8))
        #expect(stored.outputStride == 16 && stored.atrousRates == [6, 12, 18] && stored.asppChannels == 16, "\(json)")
        let expectedShapes: [String: [Int]] = [
            "classifier.0.convs.0.0.weight": [16, 512, 1, 1],
            "classifier.0.convs.1.0.weight": [16, 512, 3, 3],
            "classifier.0.convs.4.1.weight": [16, 512, 1, 1],
            "classifier.0.project.0.weight": [16, 80, 1, 1],
            "classifier.1.weight": [16, 16, 3, 3],
            "classifier.4.weight": [3, 16, 1, 1]
        ]
        for (key, shape) in expectedShapes {
            #expect(try file.shape(of: "/parameters/\(key)") == shape, "\(key)")
        }
        let (model, _) = try DeepLabCheckpoint.load(out)
        #expect(model.configuration == stored)
    }

    /// `--atrous-rates` reach the model file; resuming it with other rates (same parameter shapes, another model)
    /// is refused; a rate that is not a whole number is a usage error.
    @Test func atrousRatesReachTheModelAndAResumeMustKeepThem() throws {
        let folder = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 2, validationCases: 1, size: 32)
        let out = folder.appendingPathComponent("m.h5").path
        let common = [
            "train", folder.path, "--arch", "deeplabv3_resnet18", "--num-classes", "3", "--steps", "2",
            "--batch", "2", "--crop", "32", "--aspp-channels", "16", "--out", out
        ]
        let result = try TestSupport.slicelab(common + ["--atrous-rates", "2,3,5"])
        #expect(result.status == 0, "\(result.standardError)")
        let (model, _) = try DeepLabCheckpoint.load(out)
        #expect(model.configuration.atrousRates == [2, 3, 5])

        let last = folder.appendingPathComponent("m.last.h5").path
        let resumed = try TestSupport.slicelab(common + ["--atrous-rates", "2,3,6", "--resume", last])
        #expect(
            resumed.status == 1 && resumed.standardError.contains("model configuration differs"),
            "\(resumed.standardError)")
        let bad = try TestSupport.slicelab(common + ["--atrous-rates", "2,3.5"])
        #expect(bad.status != 0 && bad.standardError.contains("--atrous-rates"), "\(bad.standardError)")
    }

    @Test func initialWeightsThatDoNotExistAreAnErrorNamingTheFile() throws {
        let folder = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 2, validationCases: 1, size: 16)
        let result = try TestSupport.slicelab([
            "train", folder.path, "--arch", "deeplabv3_resnet18", "--num-classes", "3",
            "--init", "/nonexistent.safetensors",
            "--out", folder.appendingPathComponent("m.h5").path
        ])
        #expect(result.status == 1 && result.standardError.contains("/nonexistent.safetensors"))
    }

    @Test func epochsAndStepsTogetherIsAUsageError() throws {
        let result = try TestSupport.slicelab([
            "train", "/nonexistent", "--arch", "deeplabv3_resnet18", "--num-classes",
            "3", "--epochs", "2", "--steps", "5", "--out", "/tmp/x.h5"
        ])
        #expect(result.status == 2 && result.standardError.contains("not both"))
    }
}
