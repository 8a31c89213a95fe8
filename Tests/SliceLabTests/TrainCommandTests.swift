import Foundation
import ImageIO
import TestSupport
import Testing

/// `slicelab train` end to end: the set is validated before anything else, errors are one line naming the
/// case, and until the engine's trainable model lands the command says so plainly (exit 1).
struct TrainCommandTests {
    @Test func invalidSetIsOneErrorLineNamingTheCase() throws {
        let folder = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 2, validationCases: 1, size: 16)
        try FileManager.default.removeItem(at: folder.appendingPathComponent("labels/toy001.png"))
        let result = try TestSupport.slicelab(["train", folder.path, "--arch", "deeplabv3_resnet18", "--num-classes", "3",
                                               "--out", folder.appendingPathComponent("m.h5").path])
        #expect(result.status == 1)
        #expect(result.standardError.split(separator: "\n").count == 1)
        #expect(result.standardError.contains("case toy001") && result.standardError.contains("unpaired image"))
    }

    @Test func classCountMustMatchTheSet() throws {
        let folder = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 2, validationCases: 1, size: 16)
        let result = try TestSupport.slicelab(["train", folder.path, "--arch", "deeplabv3_resnet18", "--num-classes", "4",
                                               "--out", folder.appendingPathComponent("m.h5").path])
        #expect(result.status == 1 && result.standardError.contains("lists 3 classes"))
    }

    /// The real DeepLabV3 runs a training forward; until the engine's backward lands the command stops with a
    /// clear line and writes nothing; once it lands, two steps write a checkpoint with its history.
    @Test func validSetTrainsTheEngineOrSaysItsBackwardIsMissing() throws {
        let folder = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 2, validationCases: 1, size: 32)
        let out = folder.appendingPathComponent("m.h5").path
        let result = try TestSupport.slicelab(["train", folder.path, "--arch", "deeplabv3_resnet18", "--num-classes", "3",
                                               "--steps", "2", "--batch", "2", "--crop", "32", "--out", out])
        if result.status == 0 {
            #expect(try HDF5File.open(out).shape(of: "/history/train_loss") == [2])
        } else {
            #expect(result.status == 1, "\(result.standardError)")
            #expect(result.standardError.contains("cannot train deeplabv3_resnet18: the engine's backward pass"))
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }

    @Test func initialWeightsAreRefusedUntilTheEngineImportsThem() throws {
        let folder = try TestSupport.temporaryFolder("train-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 2, validationCases: 1, size: 16)
        let result = try TestSupport.slicelab(["train", folder.path, "--arch", "deeplabv3_resnet18", "--num-classes", "3",
                                               "--init", "/nonexistent.safetensors",
                                               "--out", folder.appendingPathComponent("m.h5").path])
        #expect(result.status == 1 && result.standardError.contains("weight import"))
    }

    @Test func epochsAndStepsTogetherIsAUsageError() throws {
        let result = try TestSupport.slicelab(["train", "/nonexistent", "--arch", "deeplabv3_resnet18", "--num-classes",
                                               "3", "--epochs", "2", "--steps", "5", "--out", "/tmp/x.h5"])
        #expect(result.status == 2 && result.standardError.contains("not both"))
    }
}
