import DeepLab
import Foundation
import ImageFiles
import SliceLabSupport

/// The training loop over any `SegmentationNetwork`: batches from a background prefetcher, loss, backward,
/// clipping, the optimizer under the schedule, validation, best and last checkpoints (atomic), exact resume,
/// early stopping, and a clear stop on a diverging loss.
///
/// Checkpoints go to `lastCheckpointPath` at every validation and at the end, and to `bestCheckpointPath`
/// whenever the mean foreground Dice improves (or at every checkpoint when there is no validation set). Both
/// hold the full training state, so either resumes; the last one resumes exactly.
///
/// What happens is reported to `observers` as `TrainingEvent`s (progress is one of them).
public final class Trainer {
    public let network: SegmentationNetwork
    public let configuration: TrainingConfiguration
    public let sampler: BatchSampler
    public let validation: TrainValidation?
    public let bestCheckpointPath: String
    public let lastCheckpointPath: String
    /// Writes the model's part of a checkpoint (parameters, architecture, preprocessing); by default the
    /// parameters as `/parameters/<key>`.
    public var writeModel: (HDF5File) throws -> Void
    /// Reads the model's part back into `network` on resume.
    public var readModel: (HDF5File) throws -> Void
    /// Who follows the run, in order; the progress reporter is the first.
    public var observers: [TrainingObserver]
    /// Sums the loss's normaliser over the ranks of a data-parallel job (`DataParallel.sumAcrossRanks`); nil for
    /// one process.
    public var sumAcrossRanks: SumAcrossRanks?
    /// The size of the gradient buckets of `TrainingEvent.gradientsReady` (PyTorch DDP's default, 25 MiB).
    public var bucketBytes = 25 << 20

    public init(
        network: SegmentationNetwork, configuration: TrainingConfiguration, sampler: BatchSampler,
        validation: TrainValidation?, bestCheckpointPath: String, lastCheckpointPath: String,
        progress: TrainProgress? = nil
    ) throws {
        try configuration.validate()
        self.network = network
        self.configuration = configuration
        self.sampler = sampler
        self.validation = validation.flatMap { $0.cases.isEmpty ? nil : $0 }
        self.bestCheckpointPath = bestCheckpointPath
        self.lastCheckpointPath = lastCheckpointPath
        let parameters = network.parameters
        self.writeModel = { try TrainingCheckpoint.writeParameters(parameters, to: $0) }
        self.readModel = { try TrainingCheckpoint.readParameters(parameters, from: $0) }
        self.observers = [progress ?? TrainProgress(totalSteps: configuration.steps)]
    }

    private func emit(_ event: TrainingEvent) throws {
        for observer in observers { try observer.handle(event) }
    }

    /// How a run ended.
    public struct Summary: Equatable, Sendable {
        public let state: TrainingState
        public let stoppedEarly: Bool
    }

    /// Trains from the start, or from `resumePath` (a checkpoint this trainer wrote; its configuration must
    /// match except for the number of steps, which may grow).
    ///
    /// - Throws: `TrainingError.divergedLoss` when the loss stops being finite (checkpoints already written are
    ///   kept); `.invalidState` for a checkpoint that does not fit; and whatever the network, data and files throw.
    @discardableResult
    public func run(resumingFrom resumePath: String? = nil) throws -> Summary {
        // Each step allocates the same tensors again: keeping them mapped saves faulting them in afresh (the bundled
        // DeepLabV3+ configuration faulted 2.2 M pages in 12 steps without it, and steps in 0.62 × the time with it).
        TensorMemoryPolicy.keepWorkingSet()
        let loss = try configuration.loss.makeLoss(classCount: configuration.classCount)
        let optimizer = configuration.optimizer.makeOptimizer(parameters: network.parameters)
        var state = TrainingState(
            step: 0, sampler: SamplerState(seed: configuration.seed), optimizer: optimizer.state())
        var lastWritten: String?
        if let resumePath {
            let file = try HDF5File.open(resumePath)
            let (stored, storedState) = try TrainingCheckpoint.readTraining(from: file)
            var comparable = stored
            comparable.steps = configuration.steps
            comparable.schedule.totalSteps = configuration.schedule.totalSteps
            guard comparable == configuration else {
                throw TrainingError.invalidState(
                    file: resumePath,
                    reason: "its training configuration differs from "
                        + "this run's; resume with the same options")
            }
            try readModel(file)
            try optimizer.restore(storedState.optimizer)
            state = storedState
            lastWritten = resumePath
            try emit(.note("resuming from \(resumePath) at step \(state.step)"))
        }
        try emit(.started(state: state))
        let prefetcher = BatchPrefetcher(sampler: sampler, state: state.sampler, depth: configuration.prefetchDepth)
        defer { prefetcher.stop() }
        var stoppedEarly = false
        while state.step < configuration.steps {
            try emit(.stepStarted(step: state.step))
            let batch = try prefetcher.next()
            network.zeroGradients()
            network.keyRandomDraws(toStep: state.step, samples: batch.sampleIndices)
            let logits = try network.forward(batch.images, training: true)
            let result = try loss.evaluate(logits: logits, labels: batch.labels, summing: sumAcrossRanks)
            guard result.loss.isFinite else {
                try emit(.note("stopping: the loss is \(result.loss) at step \(state.step + 1)"))
                throw TrainingError.divergedLoss(step: state.step + 1, loss: result.loss, checkpoint: lastWritten)
            }
            try backward(result.gradient, step: state.step)
            let norm = clipGradientNorm(network.parameters, maxNorm: configuration.gradientClipNorm ?? .infinity)
            let rate = configuration.schedule.learningRate(atStep: state.step)
            optimizer.step(learningRate: rate)
            state.step += 1
            state.sampler = batch.stateAfter
            state.history.trainLoss.append(result.loss)
            state.history.learningRate.append(rate)
            state.history.gradientNorm.append(norm)
            try emit(.stepEnded(step: state.step - 1, loss: result.loss, learningRate: rate, gradientNorm: norm))
            guard state.step % configuration.validateEvery == 0 || state.step == configuration.steps else { continue }
            state.optimizer = optimizer.state()
            let improved = try validate(&state)
            if observers.allSatisfy(\.allowsCheckpoints) {
                try writeCheckpoint(state, to: lastCheckpointPath)
                lastWritten = lastCheckpointPath
                if improved { try writeCheckpoint(state, to: bestCheckpointPath) }
            }
            if let patience = configuration.earlyStoppingPatience, state.validationsWithoutImprovement >= patience {
                try emit(
                    .note(
                        "early stop at step \(state.step): no better validation Dice in \(patience) validations "
                            + "(best \(state.bestScore.map { String(format: "%.4f", $0) } ?? "-") "
                            + "at step \(state.bestStep ?? 0))"))
                stoppedEarly = true
                break
            }
        }
        return Summary(state: state, stoppedEarly: stoppedEarly)
    }

    /// Backpropagates, reporting the gradients that complete in buckets of about `bucketBytes`, then all of them.
    private func backward(_ gradient: FloatTensor, step: Int) throws {
        var bucket: [Parameter] = []
        var bytes = 0
        var failure: Error?
        func flush() {
            guard !bucket.isEmpty, failure == nil else { return }
            do { try emit(.gradientsReady(step: step, bucket: bucket)) } catch { failure = error }
            (bucket, bytes) = ([], 0)
        }
        try network.backward(gradient) { ready in
            for parameter in ready where parameter.isTrainable {
                bucket.append(parameter)
                bytes += MemoryLayout<Float>.size * parameter.value.count
                if bytes >= bucketBytes { flush() }
            }
        }
        flush()
        if let failure { throw failure }
        try emit(.allGradientsReady(step: step))
    }

    /// Validates (when there is a validation set), records it, and says whether this is the best so far.
    private func validate(_ state: inout TrainingState) throws -> Bool {
        guard let validation else {
            state.bestStep = state.step
            return true
        }
        let result = try validation.evaluate(network)
        let history = state.history
        state.history.validationStep = history.validationStep + [state.step]
        state.history.validationLoss = history.validationLoss + [result.loss]
        state.history.validationDice = history.validationDice + [result.dice]
        state.history.validationIoU = history.validationIoU + [result.iou]
        state.history.validationMeanDice = history.validationMeanDice + [result.meanForegroundDice]
        let improved = state.bestScore.map { result.meanForegroundDice > $0 } ?? true
        if improved {
            (state.bestScore, state.bestStep, state.validationsWithoutImprovement) =
                (result.meanForegroundDice, state.step, 0)
        } else {
            state.validationsWithoutImprovement += 1
        }
        try emit(.validated(stepsDone: state.step, result: result, improved: improved))
        return improved
    }

    private func writeCheckpoint(_ state: TrainingState, to path: String) throws {
        try HDF5File.write(to: path, updating: false) { file in
            try writeModel(file)
            try TrainingCheckpoint.writeTraining(configuration, state, to: file)
            try file.setAttribute("slicelab_version", .string(sliceLabVersion))
            try file.setAttribute("preprocessing", .string(configuration.preprocessing.json))
        }
        try emit(.checkpointWritten(path: path, stepsDone: state.step))
    }
}
