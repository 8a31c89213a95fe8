import Foundation
import SliceLabSupport

/// Reports training progress on standard error: on a terminal a bar redrawn in place (step, loss, steps/s,
/// ETA); otherwise a plain line every `plainInterval` steps. Validation results always get their own line.
/// A `TrainingObserver` of the trainer's events.
public final class TrainProgress: TrainingObserver {
    private let totalSteps: Int
    private let isTerminal: Bool
    private let plainInterval: Int
    private let write: (String) -> Void
    private var start: Date?
    private var startStep = 0
    private var lastDraw = Date.distantPast

    /// - Parameters:
    ///   - isTerminal: draw a bar (default: whether standard error is a TTY).
    ///   - write: where text goes (standard error by default; tests capture it).
    public init(
        totalSteps: Int, isTerminal: Bool = isatty(2) == 1, plainInterval: Int = 10,
        write: @escaping (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    ) {
        self.totalSteps = totalSteps
        self.isTerminal = isTerminal
        self.plainInterval = max(1, plainInterval)
        self.write = write
    }

    public func handle(_ event: TrainingEvent) {
        switch event {
        case .stepEnded(let step, let loss, let learningRate, _):
            self.step(step + 1, loss: loss, learningRate: learningRate)
        case .validated(let stepsDone, let result, let improved):
            let dice = result.dice.map { String(format: "%.3f", $0) }.joined(separator: " ")
            note(
                String(
                    format: "validation at step %d: loss %.4f, mean foreground Dice %.4f%@ (per class %@)",
                    stepsDone, result.loss, result.meanForegroundDice, improved ? ", best" : "", dice))
        case .note(let line):
            note(line)
        default:
            break
        }
    }

    /// Records that `step` (1-based) finished with `loss`.
    public func step(_ step: Int, loss: Double, learningRate: Double) {
        let now = Date()
        if start == nil {  // the rate counts from the end of the first step, so it leaves out warm-up
            start = now
            startStep = step
        }
        let elapsed = now.timeIntervalSince(start ?? now)
        let rate = elapsed > 0 && step > startStep ? Double(step - startStep) / elapsed : 0
        let eta = rate > 0 ? Double(totalSteps - step) / rate : 0
        let numbers = String(
            format: "step %d/%d  loss %.4f  lr %.2e  %.3g steps/s  ETA %@", step, totalSteps, loss,
            learningRate, rate, ProgressReporter.clock(eta))
        if isTerminal {
            guard now.timeIntervalSince(lastDraw) > 0.1 || step == totalSteps else { return }
            lastDraw = now
            let width = 24
            let filled = totalSteps > 0 ? width * step / totalSteps : width
            write(
                "\r[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
                    + "] " + numbers + "\u{1B}[K")
        } else if step % plainInterval == 0 || step == totalSteps {
            write(numbers + "\n")
        }
    }

    /// A line of its own (validation results, checkpoints, stopping).
    public func note(_ line: String) {
        write((isTerminal ? "\r\u{1B}[K" : "") + line + "\n")
    }
}
