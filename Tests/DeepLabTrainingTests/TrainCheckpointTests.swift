import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

/// The checkpoint's training part round-trips exactly, refuses files that are not training checkpoints, and
/// the progress reporter draws a bar on a terminal.
struct TrainCheckpointTests {
    static func configuration() -> TrainingConfiguration {
        TrainingConfiguration(
            classCount: 3, steps: 10, batchSize: 2, validateEvery: 5,
            schedule: LearningRateSchedule(baseLearningRate: 0.01, totalSteps: 10, warmupSteps: 2),
            optimizer: .sgd(SGD.Configuration(nesterov: true)),
            loss: LossConfiguration(kind: .focal, classWeights: [1, 2, 3]), gradientClipNorm: 5,
            earlyStoppingPatience: 3, seed: UInt64.max - 7,
            augmentation: AugmentationConfiguration(cropSize: 64, elasticMagnitude: 2),
            preprocessing: .window(center: 40, width: 400))
    }

    @Test func trainingStateRoundTripsExactly() throws {
        let folder = try TestSupport.temporaryFolder("train-checkpoint")
        defer { try? FileManager.default.removeItem(at: folder) }
        var random = SeededGenerator(seed: UInt64.max)
        _ = random.next()
        var history = TrainingHistory()
        history.trainLoss = [0.9, 0.7, .pi]
        history.learningRate = [0.01, 0.02, 0.03]
        history.gradientNorm = [1, 2, 3]
        history.validationStep = [3]
        history.validationLoss = [0.5]
        history.validationDice = [[0.9, 0.8, 0.7]]
        history.validationIoU = [[0.8, 0.7, 0.6]]
        history.validationMeanDice = [0.75]
        let state = TrainingState(
            step: 3,
            sampler: SamplerState(
                random: random, order: [2, 0, 1], position: 2, epoch: 1, drawn: 11,
                seed: Self.configuration().seed),
            optimizer: OptimizerState(kind: "sgd", stepCount: 3, buffers: ["a.weight": ["momentum_buffer": [1, -2.5]]]),
            history: history, bestScore: 0.75, bestStep: 3, validationsWithoutImprovement: 1)
        let path = folder.appendingPathComponent("c.h5").path
        try HDF5File.write(to: path) { try TrainingCheckpoint.writeTraining(Self.configuration(), state, to: $0) }
        let (configuration, read) = try TrainingCheckpoint.readTraining(from: HDF5File.open(path))
        #expect(configuration == Self.configuration())
        #expect(read == state)
    }

    @Test func fileWithoutTrainingStateIsATypedError() throws {
        let folder = try TestSupport.temporaryFolder("train-checkpoint")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("plain.h5").path
        try HDF5File.write(to: path) { try $0.write([Float(1)], shape: [1], to: "/x") }
        #expect { try TrainingCheckpoint.readTraining(from: HDF5File.open(path)) } throws: { error in
            guard case .invalidState(let file, let reason) = error as? TrainingError else { return false }
            return file == path && reason.contains("/training")
        }
    }

    @Test func terminalProgressRedrawsABarWithRateAndETA() {
        final class Box: @unchecked Sendable { var text = "" }
        let box = Box()
        let progress = TrainProgress(totalSteps: 3, isTerminal: true) { box.text += $0 }
        for step in 1...3 { progress.step(step, loss: 0.5, learningRate: 0.01) }
        progress.note("validation at step 3")
        #expect(box.text.hasPrefix("\r[") && box.text.contains("step 3/3") && box.text.contains("steps/s"))
        #expect(box.text.contains("ETA") && box.text.contains("\r\u{1B}[Kvalidation at step 3\n"))
        #expect(!box.text.contains("step 2/3\n"))
    }
}
