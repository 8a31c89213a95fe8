/// Errors of training: mismatched tensors, labels outside the classes, bad configurations, diverging runs and
/// unreadable training state.
public enum TrainingError: Error, CustomStringConvertible, Equatable {
    /// Two tensors that must agree do not (`what` names them).
    case shapeMismatch(what: String, expected: [Int], actual: [Int])
    /// A label value that is neither a class index in `0..<classCount` nor the ignore label.
    case labelOutOfRange(value: Int, classCount: Int)
    /// A configuration value that cannot work, with the reason.
    case invalidConfiguration(String)
    /// The loss became NaN or infinite at `step`; the last good checkpoint is kept at `checkpoint`.
    case divergedLoss(step: Int, loss: Double, checkpoint: String?)
    /// A checkpoint's training state is missing or inconsistent.
    case invalidState(file: String, reason: String)

    public var description: String {
        switch self {
        case .shapeMismatch(let what, let expected, let actual):
            return "\(what): expected shape \(expected), got \(actual)"
        case .labelOutOfRange(let value, let classCount):
            return "label value \(value) is outside the \(classCount) classes (0...\(classCount - 1)) "
                + "and is not the ignore label"
        case .invalidConfiguration(let reason):
            return "invalid training configuration: \(reason)"
        case .divergedLoss(let step, let loss, let checkpoint):
            let kept = checkpoint.map { "; the last good checkpoint is kept at \($0)" } ?? "; no checkpoint was written"
            return "training diverged at step \(step): the loss is \(loss)\(kept). "
                + "Lower the learning rate or enable gradient clipping."
        case .invalidState(let file, let reason):
            return "\(file): cannot resume: \(reason)"
        }
    }
}
