import DeepLab

/// What happens in a training run, in order, as `Trainer` reports it to its observers.
///
/// Per step: `stepStarted`, one or more `gradientsReady` while backward runs, `allGradientsReady`, `stepEnded`;
/// at a validation step then `validated` and one `checkpointWritten` per checkpoint. Steps are 0-based.
public enum TrainingEvent {
    /// Before the first step; after a resume, `state` is the restored one.
    case started(state: TrainingState)
    /// Step `step` is about to take its batch.
    case stepStarted(step: Int)
    /// Parameters whose gradients are complete while backward still runs: about `Trainer.bucketBytes` of them, in
    /// the order they complete (the heads first, the stem last). Every trainable parameter is in exactly one
    /// bucket per step, so an all-reduce can start per bucket and overlap the rest of the pass.
    case gradientsReady(step: Int, bucket: [Parameter])
    /// Every gradient of the step is complete; clipping and the optimizer follow.
    case allGradientsReady(step: Int)
    /// Step `step` finished: its training loss, learning rate and gradient norm before clipping.
    case stepEnded(step: Int, loss: Double, learningRate: Double, gradientNorm: Double)
    /// A validation after `stepsDone` steps; `improved` when it is the best so far.
    case validated(stepsDone: Int, result: TrainValidation.Result, improved: Bool)
    /// A checkpoint was written (atomically) at `path`.
    case checkpointWritten(path: String, stepsDone: Int)
    /// A line for people: resuming, stopping early, a diverging loss.
    case note(String)
}

/// Something that follows a training run: progress and logging, and the scale-out issue's gradient all-reduce
/// and rank-0-only checkpoints attach here without editing the loop.
public protocol TrainingObserver: AnyObject {
    /// Handles one event; an error stops the run (checkpoints already written are kept).
    func handle(_ event: TrainingEvent) throws
    /// Whether checkpoints are written at all while this observer follows the run (a rank other than 0 of a
    /// data-parallel job says no). Default: true.
    var allowsCheckpoints: Bool { get }
}

extension TrainingObserver {
    public var allowsCheckpoints: Bool { true }
}
