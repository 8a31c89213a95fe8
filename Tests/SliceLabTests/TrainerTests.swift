import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import TestSupport
import Testing

@testable import SliceLabDatasets
@testable import SliceLabKit

/// The training loop, driven with a pure-Swift per-pixel linear network on the generated toy set: it learns,
/// resumes exactly after an interruption, writes checkpoints atomically, stops on divergence and early.
struct TrainerTests {
    /// A toy set of 32×32 images (6 train, 2 val) in a fresh folder.
    static func toySet() throws -> URL {
        let folder = try TestSupport.temporaryFolder("train-toy")
        try TrainToySet.write(to: folder, trainCases: 6, validationCases: 2, size: 32, seed: 11)
        return folder
    }

    static func options(_ folder: URL, steps: Int, validateEvery: Int) -> TrainOptions {
        var options = TrainOptions(
            datasetPath: folder.path, architecture: "pixel-linear", classCount: 3,
            outputPath: folder.appendingPathComponent("model.h5").path)
        options.steps = steps
        options.batchSize = 2
        options.cropSize = 24
        options.learningRate = 0.5
        options.validateEvery = validateEvery
        options.seed = 5
        // Geometry and noise, but no gamma or contrast: a per-pixel model separates classes by absolute brightness.
        options.augmentation = AugmentationConfiguration(
            cropSize: 24, rotationDegrees: 20, brightness: 0.02,
            contrast: 0, gammaProbability: 0, noiseStandardDeviation: 0.02)
        return options
    }

    /// A trainer of the pixel-linear network on the toy set's first case alone, without validation.
    static func oneCaseTrainer(
        _ folder: URL, steps: Int,
        validateEvery: Int
    ) throws -> (Trainer, PixelLinearNetwork, TrainOptions) {
        let options = Self.options(folder, steps: steps, validateEvery: validateEvery)
        let set = try LabeledSet.open(options.datasetPath)
        let configuration = try TrainWorkflow.configuration(options, set: set)
        let network = PixelLinearNetwork(inputChannels: 1, classCount: 3, seed: 3)
        let sample = try set.load("toy000").frame(0)
        let image = TrainWorkflow.prepare(sample.image, inputChannels: 1, preprocessing: configuration.preprocessing)
        let sampler = try BatchSampler(
            sampleCount: 1, batchSize: 2,
            augmenter: Augmenter(configuration.augmentation)
        ) { _ in (image, sample.labels) }
        let trainer = try Trainer(
            network: network, configuration: configuration, sampler: sampler, validation: nil,
            bestCheckpointPath: options.outputPath, lastCheckpointPath: options.lastCheckpointPath,
            progress: Self.quiet(steps).0)
        return (trainer, network, options)
    }

    static func quiet(_ steps: Int) -> (TrainProgress, () -> String) {
        final class Box: @unchecked Sendable { var text = "" }
        let box = Box()
        return (TrainProgress(totalSteps: steps, isTerminal: false, plainInterval: 5) { box.text += $0 }, { box.text })
    }

    /// With Dice + CE, AdamW at 0.5 and augmentation, 150 steps take the linear model to a validation mean
    /// foreground Dice ≥ 0.9 on the toy set (measured 0.948 at seed 5; the shapes differ in brightness, so one
    /// pixel decides its class, and the middle class is the hard one for a linear model).
    @Test func linearModelLearnsTheToySet() throws {
        let folder = try Self.toySet()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (progress, output) = Self.quiet(150)
        let summary = try TrainWorkflow.run(Self.options(folder, steps: 150, validateEvery: 50), progress: progress) {
            PixelLinearNetwork(inputChannels: $0.inputChannels, classCount: $0.classCount, seed: 3)
        }
        let history = summary.state.history
        #expect(history.trainLoss.count == 150 && history.validationStep == [50, 100, 150])
        #expect(
            (history.validationMeanDice.last ?? 0) >= 0.9, "\(history.validationDice) \(summary.state.bestScore ?? 0)")
        let early: Double = history.trainLoss.prefix(10).reduce(0, +)
        let late: Double = history.trainLoss.suffix(10).reduce(0, +)
        #expect(late < early / 2, "the loss of the last 10 steps is \(late), of the first 10 \(early)")
        #expect(output().contains("step 150/150") && output().contains("validation at step 100"))
        for path in [
            folder.appendingPathComponent("model.h5").path, folder.appendingPathComponent("model.last.h5").path
        ] {
            let file = try HDF5File.open(path)
            #expect(try file.shape(of: "/history/train_loss") == [150] || path.hasSuffix("model.h5"))
            #expect(try file.shape(of: "/parameters/classifier.weight") == [3, 1, 1, 1])
        }
    }

    /// Interrupting at step 9 (the network throws, as a kill would stop it) keeps the step-8 checkpoint; resuming
    /// from it reproduces the uninterrupted run's losses, history and parameters bit for bit.
    @Test func resumeAfterInterruptionReproducesTheUninterruptedRun() throws {
        let folder = try Self.toySet()
        defer { try? FileManager.default.removeItem(at: folder) }
        let options = Self.options(folder, steps: 12, validateEvery: 4)
        let straightNetwork = PixelLinearNetwork(inputChannels: 1, classCount: 3, seed: 3)
        let straight = try TrainWorkflow.run(options, progress: Self.quiet(12).0) { _ in straightNetwork }

        var interrupted = options
        interrupted.outputPath = folder.appendingPathComponent("second.h5").path
        struct Killed: Error {}
        #expect(throws: Killed.self) {
            try TrainWorkflow.run(interrupted, progress: Self.quiet(12).0) { _ in
                let network = PixelLinearNetwork(inputChannels: 1, classCount: 3, seed: 3)
                network.beforeForward = { count, training in if training && count == 8 { throw Killed() } }
                return network
            }
        }
        let kept = try TrainingCheckpoint.readTraining(from: HDF5File.open(interrupted.lastCheckpointPath)).1
        #expect(kept.step == 8)

        var resumed = interrupted
        resumed.resumePath = interrupted.lastCheckpointPath
        let resumedNetwork = PixelLinearNetwork(inputChannels: 1, classCount: 3, seed: 99)  // overwritten on resume
        let second = try TrainWorkflow.run(resumed, progress: Self.quiet(12).0) { _ in resumedNetwork }
        #expect(second.state.history == straight.state.history)
        #expect(second.state.sampler == straight.state.sampler)
        #expect(zip(straightNetwork.parameters, resumedNetwork.parameters).allSatisfy { $0.value == $1.value })
    }

    /// A checkpoint write that fails part-way leaves the previous checkpoint whole and readable.
    @Test func failedCheckpointWriteKeepsThePreviousOne() throws {
        let folder = try Self.toySet()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (trainer, network, options) = try Self.oneCaseTrainer(folder, steps: 8, validateEvery: 4)
        struct DiskFull: Error {}
        var writes = 0
        let parameters = network.parameters
        trainer.writeModel = { file in
            writes += 1
            try TrainingCheckpoint.writeParameters(parameters, to: file)
            if writes == 3 { throw DiskFull() }  // the second "last" checkpoint, after the parameters went in
        }
        #expect(throws: DiskFull.self) { try trainer.run() }
        let state = try TrainingCheckpoint.readTraining(from: HDF5File.open(options.lastCheckpointPath)).1
        #expect(state.step == 4)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    /// A NaN loss stops the run with `divergedLoss` naming the step and the last good checkpoint, which is kept.
    @Test func divergingLossStopsAndKeepsTheLastGoodCheckpoint() throws {
        let folder = try Self.toySet()
        defer { try? FileManager.default.removeItem(at: folder) }
        let options = Self.options(folder, steps: 12, validateEvery: 4)
        #expect {
            try TrainWorkflow.run(options, progress: Self.quiet(12).0) { _ in
                let network = PixelLinearNetwork(inputChannels: 1, classCount: 3, seed: 3)
                network.nanFromForward = 5
                return network
            }
        } throws: { error in
            guard case .divergedLoss(let step, let loss, let checkpoint) = error as? TrainingError else { return false }
            return step == 6 && loss.isNaN && checkpoint == options.lastCheckpointPath
        }
        let state = try TrainingCheckpoint.readTraining(from: HDF5File.open(options.lastCheckpointPath)).1
        #expect(state.step == 4 && state.history.trainLoss.allSatisfy(\.isFinite))
    }

    /// With a learning rate too small to change anything, validation never improves after the first, and
    /// patience 2 stops the run at the third validation.
    @Test func earlyStoppingAfterPatienceValidationsWithoutImprovement() throws {
        let folder = try Self.toySet()
        defer { try? FileManager.default.removeItem(at: folder) }
        let options = Self.options(folder, steps: 40, validateEvery: 4)
        let set = try LabeledSet.open(options.datasetPath)
        var configuration = try TrainWorkflow.configuration(options, set: set)
        configuration.schedule.baseLearningRate = 1e-30
        configuration.earlyStoppingPatience = 2
        let network = PixelLinearNetwork(inputChannels: 1, classCount: 3, seed: 3)
        let cases = try TrainWorkflow.frames(
            of: set, split: "val", options: options,
            preprocessing: configuration.preprocessing)
        let sample = try set.load("toy000").frame(0)
        let image = TrainWorkflow.prepare(sample.image, inputChannels: 1, preprocessing: configuration.preprocessing)
        let sampler = try BatchSampler(
            sampleCount: 1, batchSize: 2,
            augmenter: Augmenter(configuration.augmentation)
        ) { _ in (image, sample.labels) }
        let trainer = try Trainer(
            network: network, configuration: configuration, sampler: sampler,
            validation: TrainValidation(cases: cases, classCount: 3, loss: CrossEntropyLoss()),
            bestCheckpointPath: options.outputPath, lastCheckpointPath: options.lastCheckpointPath,
            progress: Self.quiet(40).0)
        let summary = try trainer.run()
        #expect(summary.stoppedEarly && summary.state.step == 12 && summary.state.bestStep == 4)
    }

    /// The checkpoint's history and training state, read by h5py (the format outside tools see).
    @Test func checkpointLayoutReadsInH5py() throws {
        let folder = try Self.toySet()
        defer { try? FileManager.default.removeItem(at: folder) }
        let options = Self.options(folder, steps: 6, validateEvery: 3)
        try TrainWorkflow.run(options, progress: Self.quiet(6).0) { _ in
            PixelLinearNetwork(inputChannels: 1, classCount: 3, seed: 3)
        }
        let script = """
            import h5py, json, sys
            f = h5py.File(sys.argv[1], 'r')
            c = json.loads(f['training'].attrs['configuration'])
            print(f['history/train_loss'].shape[0], f['history/val_dice'].shape, int(f['training'].attrs['step']),
                  c['classCount'], c['steps'], sorted(f['optimizer'].keys()), f['training/random_state'].shape[0],
                  json.loads(f.attrs['preprocessing'])['normalize'])
            """
        let output = try TestSupport.runPython(script, arguments: [options.lastCheckpointPath])
        #expect(
            output.trimmingCharacters(in: .whitespacesAndNewlines)
                == "6 (2, 3) 6 3 6 ['classifier.bias', 'classifier.weight'] 4 window")
    }

    /// The test network's backward (which the loop tests rely on) matches central differences of the
    /// cross-entropy through its forward, within 1e-3 of the largest gradient entry (Float32 logits, h = 1e-2).
    @Test func testNetworkBackwardMatchesFiniteDifferences() throws {
        let network = PixelLinearNetwork(inputChannels: 2, classCount: 3, seed: 4)
        let input = FloatTensor(shape: [2, 2, 3, 3], values: (0..<36).map { sin(Float($0) * 0.7) })
        let labels = LabelTensor(shape: [2, 3, 3], values: (0..<18).map { Int32($0 % 3) })
        let loss = CrossEntropyLoss()
        network.zeroGradients()
        let result = try loss.evaluate(logits: network.forward(input, training: true), labels: labels)
        try network.backward(result.gradient)
        let scale = Double((network.weight.gradient + network.bias.gradient).map(abs).max() ?? 1)
        for parameter in [network.weight, network.bias] {
            let analytic = parameter.gradient
            for index in parameter.value.indices {
                let original = parameter.value[index]
                parameter.value[index] = original + 1e-2
                let up = try loss.evaluate(logits: network.forward(input, training: false), labels: labels).loss
                parameter.value[index] = original - 1e-2
                let down = try loss.evaluate(logits: network.forward(input, training: false), labels: labels).loss
                parameter.value[index] = original
                let numeric = (up - down) / 2e-2
                #expect(abs(numeric - Double(analytic[index])) <= 1e-3 * scale, "\(parameter.name)[\(index)]")
            }
        }
    }

    /// Validation Dice and IoU on a hand-counted case: one true negative, one true positive, one false positive
    /// and an ignored pixel give Dice 2/3 and IoU 1/2 for both classes.
    @Test func validationCountsDiceAndIoUOverPixelsNotIgnored() throws {
        let network = PixelLinearNetwork(inputChannels: 1, classCount: 2, seed: 1)
        (network.weight.value, network.bias.value) = ([-1, 1], [0.5, -0.5])  // class 1 where x > 0.5
        let validation = TrainValidation(
            cases: [
                .init(
                    name: "c", image: FloatTensor(shape: [1, 2, 2], values: [0, 1, 1, 0]),
                    labels: LabelTensor(shape: [2, 2], values: [Int32(0), 1, 0, -100]))
            ],
            classCount: 2, loss: CrossEntropyLoss())
        let result = try validation.evaluate(network)
        #expect(result.dice.map { ($0 * 1e9).rounded() } == [666_666_667, 666_666_667])
        #expect(result.iou == [0.5, 0.5])
        #expect(abs(result.meanForegroundDice - 2.0 / 3) < 1e-12)
    }

    /// The prefetcher yields exactly the batches of repeated `nextBatch` calls, and a sample that fails to load
    /// surfaces as the error of `next()` instead of hanging.
    @Test func prefetcherMatchesSequentialSamplingAndSurfacesErrors() throws {
        let images = (0..<5).map { i in FloatTensor(shape: [1, 8, 8], values: (0..<64).map { Float($0 + i) }) }
        let labels = LabelTensor(shape: [8, 8], values: (0..<64).map { Int32($0 % 3) })
        let sampler = try BatchSampler(
            sampleCount: 5, batchSize: 2,
            augmenter: Augmenter(AugmentationConfiguration(cropSize: 6))
        ) { (images[$0], labels) }
        var state = SamplerState(seed: 9)
        let prefetcher = BatchPrefetcher(sampler: sampler, state: state, depth: 2)
        for _ in 0..<7 {
            let expected = try sampler.nextBatch(&state)
            let actual = try prefetcher.next()
            #expect(actual.images == expected.images && actual.labels == expected.labels)
            #expect(actual.stateAfter == state)
        }
        prefetcher.stop()
        struct Broken: Error {}
        let failing = try BatchSampler(sampleCount: 3, batchSize: 2, augmenter: Augmenter(.none())) { index in
            if index == 1 { throw Broken() }
            return (images[index], labels)
        }
        let failingPrefetcher = BatchPrefetcher(sampler: failing, state: SamplerState(seed: 1), depth: 2)
        #expect(throws: Broken.self) { for _ in 0..<3 { _ = try failingPrefetcher.next() } }
        #expect(throws: (any Error).self) { _ = try failingPrefetcher.next() }
    }
}

/// The trainer's events (issue #17 §6): their order, the gradient buckets, and an observer that forbids
/// checkpoints (as a data-parallel rank other than 0 will).
struct TrainerEventTests {
    final class Recorder: TrainingObserver {
        var events: [TrainingEvent] = []
        var allowsCheckpoints = true
        func handle(_ event: TrainingEvent) { events.append(event) }
    }

    static func run(allowsCheckpoints: Bool) throws -> (Recorder, Trainer, URL) {
        let folder = try TrainerTests.toySet()
        let trainer = try TrainerTests.oneCaseTrainer(folder, steps: 4, validateEvery: 2).0
        let recorder = Recorder()
        recorder.allowsCheckpoints = allowsCheckpoints
        trainer.observers.append(recorder)
        trainer.bucketBytes = 8  // the weight and the bias (12 bytes each) fill a bucket each
        try trainer.run()
        return (recorder, trainer, folder)
    }

    @Test func eventsComeInOrderWithEveryGradientInOneBucketPerStep() throws {
        let (recorder, trainer, folder) = try Self.run(allowsCheckpoints: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var kinds: [String] = []
        var bucketed: [Int: [ObjectIdentifier]] = [:]
        for event in recorder.events {
            switch event {
            case .started: kinds.append("started")
            case .stepStarted(let step): kinds.append("start \(step)")
            case .gradientsReady(let step, let bucket):
                kinds.append("bucket \(step)")
                bucketed[step, default: []] += bucket.map(ObjectIdentifier.init)
            case .allGradientsReady(let step): kinds.append("all \(step)")
            case .stepEnded(let step, let loss, _, _):
                kinds.append("end \(step)")
                #expect(loss.isFinite)
            case .validated(let stepsDone, _, _): kinds.append("validated \(stepsDone)")
            case .checkpointWritten(let path, let stepsDone):
                kinds.append("checkpoint \(stepsDone)")
                #expect(FileManager.default.fileExists(atPath: path))
            case .note: break
            }
        }
        func step(_ s: Int) -> [String] { ["start \(s)", "bucket \(s)", "bucket \(s)", "all \(s)", "end \(s)"] }
        // No validation set: every validation step writes the last and the best checkpoint.
        #expect(
            kinds == ["started"] + step(0) + step(1) + ["checkpoint 2", "checkpoint 2"] + step(2) + step(3)
                + ["checkpoint 4", "checkpoint 4"])
        let trainable = trainer.network.parameters.filter(\.isTrainable).map(ObjectIdentifier.init)
        for s in 0..<4 { #expect(bucketed[s]?.sorted { "\($0)" < "\($1)" } == trainable.sorted { "\($0)" < "\($1)" }) }
    }

    @Test func anObserverThatForbidsCheckpointsLeavesNone() throws {
        let (recorder, trainer, folder) = try Self.run(allowsCheckpoints: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(!recorder.events.contains { if case .checkpointWritten = $0 { return true } else { return false } })
        #expect(!FileManager.default.fileExists(atPath: trainer.bestCheckpointPath))
        #expect(!FileManager.default.fileExists(atPath: trainer.lastCheckpointPath))
    }
}
