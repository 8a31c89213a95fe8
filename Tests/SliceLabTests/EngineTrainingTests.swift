import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import TestSupport
import Testing

@testable import SliceLabKit

/// The training loop driving the engine's DeepLabV3 (oneDNN): an interrupted and resumed run reproduces the
/// uninterrupted one bit for bit, dropout included.
struct EngineTrainingTests {
    /// The smallest engine configuration: ResNet-18, ASPP width 16, 32-pixel crops, batches of 2.
    static func options(_ folder: URL, steps: Int, validateEvery: Int, output: String) -> TrainOptions {
        var options = TrainOptions(
            datasetPath: folder.path, architecture: "deeplabv3_resnet18", classCount: 3,
            outputPath: folder.appendingPathComponent(output).path)
        options.steps = steps
        options.batchSize = 2
        options.cropSize = 32
        options.asppChannels = 16
        options.inputScale = 1  // the measured setting; the plan would scale the small toy shapes up
        options.validateEvery = validateEvery
        options.seed = 7
        return options
    }

    /// Four steps straight, against two steps, a kill during the third (the network throws, as a kill would stop
    /// the run) and `--resume` from the step-2 checkpoint: the same training losses, learning rates, gradient norms
    /// and validation results, bit for bit, and the same final parameters and batch-norm statistics. The ASPP's
    /// dropout (p = 0.5) is active, so this holds only because its masks are keyed by the samples' global indices; the augmentation,
    /// sampler order, AdamW moments and the schedule come back from the checkpoint.
    @Test func resumedDeepLabV3RunReproducesTheUninterruptedRunBitForBit() throws {
        let folder = try TestSupport.temporaryFolder("train-engine-resume")
        defer { try? FileManager.default.removeItem(at: folder) }
        try TrainToySet.write(to: folder, trainCases: 4, validationCases: 1, size: 40, seed: 3)
        let quiet = { TrainProgress(totalSteps: 4, isTerminal: false, write: { _ in }) }

        let straightOptions = Self.options(folder, steps: 4, validateEvery: 2, output: "straight.h5")
        let straightNetwork = try TrainWorkflow.makeEngineNetwork(straightOptions)
        let straight = try TrainWorkflow.run(straightOptions, progress: quiet()) { _ in straightNetwork }

        let interrupted = Self.options(folder, steps: 4, validateEvery: 2, output: "interrupted.h5")
        struct Killed: Error {}
        #expect(throws: Killed.self) {
            try TrainWorkflow.run(interrupted, progress: quiet()) { options in
                InterruptedNetwork(try TrainWorkflow.makeEngineNetwork(options), failingAtTrainingForward: 2) {
                    Killed()
                }
            }
        }
        let kept = try TrainingCheckpoint.readTraining(from: HDF5File.open(interrupted.lastCheckpointPath)).1
        #expect(kept.step == 2 && kept.history.trainLoss == Array(straight.state.history.trainLoss.prefix(2)))

        var resumed = interrupted
        resumed.resumePath = interrupted.lastCheckpointPath
        let resumedNetwork = try TrainWorkflow.makeEngineNetwork(resumed)
        let second = try TrainWorkflow.run(resumed, progress: quiet()) { _ in resumedNetwork }
        #expect(
            second.state.history.trainLoss == straight.state.history.trainLoss,
            "\(second.state.history.trainLoss) against \(straight.state.history.trainLoss)")
        #expect(second.state.history == straight.state.history)
        #expect(second.state.sampler == straight.state.sampler)
        let differing = zip(straightNetwork.parameters, resumedNetwork.parameters).filter { $0.value != $1.value }
        #expect(differing.isEmpty, "\(differing.count) parameters differ, first \(differing.first?.0.name ?? "")")
    }
}

/// A pass-through to a network that throws at its n-th training forward (0-based), as a kill would stop a run.
final class InterruptedNetwork: SegmentationNetwork {
    let wrapped: SegmentationNetwork
    let failingForward: Int
    let makeError: () -> Error
    private var trainingForwards = 0

    init(_ wrapped: SegmentationNetwork, failingAtTrainingForward index: Int, error: @escaping () -> Error) {
        (self.wrapped, failingForward, makeError) = (wrapped, index, error)
    }

    var parameters: [Parameter] { wrapped.parameters }

    func forward(_ input: FloatTensor, training: Bool) throws -> FloatTensor {
        if training {
            defer { trainingForwards += 1 }
            if trainingForwards == failingForward { throw makeError() }
        }
        return try wrapped.forward(input, training: training)
    }

    func backward(_ gradientOfLogits: FloatTensor, gradientsReady: GradientsReady) throws {
        try wrapped.backward(gradientOfLogits, gradientsReady: gradientsReady)
    }
    func zeroGradients() { wrapped.zeroGradients() }
    func keyRandomDraws(toStep step: Int) { wrapped.keyRandomDraws(toStep: step) }
    func keyRandomDraws(toStep step: Int, samples: [Int]) { wrapped.keyRandomDraws(toStep: step, samples: samples) }
}
