import DeepLab
import Distributed
import Foundation

/// Data-parallel training over the ranks of an MPI job, as a `TrainingObserver` of the trainer's events.
///
/// At the start rank 0's parameters and buffers are broadcast, so every rank starts from the same weights (fresh
/// or resumed). Each `gradientsReady` bucket's gradients are packed into one buffer, summed over the ranks at once
/// (before backward continues with the layers below: a blocking `MPI_Allreduce`, measured 2–4× faster here than
/// the non-blocking one, which without an asynchronous progress thread did not overlap with backward anyway) and
/// written back. The sums (not means) are what one
/// process computes, because every rank's loss is normalised by the global batch's normaliser
/// (`sumAcrossRanks`, given to the loss). Without synchronised batch norm each rank normalises with its own
/// batch's statistics (as PyTorch's DDP does) and rank 0's running statistics are broadcast after every step, so
/// the ranks stay identical. Only rank 0 writes checkpoints.
public final class DataParallel: TrainingObserver {
    public let communicator: Communicator
    public let network: SegmentationNetwork
    /// Whether batch-norm statistics are summed over the ranks (`--sync-bn`) rather than kept per rank.
    public let synchronizesBatchNorm: Bool
    /// The packed gradients of one bucket, reused from bucket to bucket.
    private var buffer: [Float] = []
    private var reducedThisStep = 0
    /// Seconds spent in the gradient all-reduce (starting, waiting, copying back), summed over the steps.
    public private(set) var reductionSeconds = 0.0
    /// Gradient values all-reduced per step (4 bytes each).
    public private(set) var reducedValuesPerStep = 0
    public private(set) var steps = 0
    private var stepStart = Date()
    /// Seconds of whole steps (from `stepStarted` to `stepEnded`), summed.
    public private(set) var stepSeconds = 0.0

    public init(communicator: Communicator, network: SegmentationNetwork, synchronizesBatchNorm: Bool) {
        self.communicator = communicator
        self.network = network
        self.synchronizesBatchNorm = synchronizesBatchNorm
    }

    public var allowsCheckpoints: Bool { communicator.rank == 0 }

    /// Sums a loss's normaliser over the ranks (`SegmentationLoss.evaluate(logits:labels:summing:)`).
    public var sumAcrossRanks: SumAcrossRanks {
        { [communicator] values in try communicator.allReduceSum(&values, what: "loss normaliser all-reduce") }
    }

    public func handle(_ event: TrainingEvent) throws {
        switch event {
        case .started:
            try broadcast(network.parameters, what: "initial weights broadcast")
        case .stepStarted:
            stepStart = Date()
        case .gradientsReady(let step, let bucket):
            let start = Date()
            let count = bucket.reduce(0) { $0 + $1.value.count }
            if buffer.count < count { buffer = [Float](repeating: 0, count: count) }
            try buffer.withUnsafeMutableBufferPointer { values in
                var offset = 0
                for parameter in bucket {
                    parameter.gradient.withUnsafeBufferPointer {
                        _ = UnsafeMutableBufferPointer(rebasing: values[offset..<(offset + $0.count)])
                            .update(fromContentsOf: $0)
                        offset += $0.count
                    }
                }
                try communicator.allReduceSum(
                    UnsafeMutableBufferPointer(rebasing: values[0..<count]),
                    what: "gradient all-reduce of step \(step + 1)")
                offset = 0
                for parameter in bucket {
                    parameter.gradient.withUnsafeMutableBufferPointer {
                        _ = $0.update(fromContentsOf: values[offset..<(offset + $0.count)])
                        offset += $0.count
                    }
                }
            }
            reducedThisStep += count
            reductionSeconds += Date().timeIntervalSince(start)
        case .allGradientsReady:
            reducedValuesPerStep = reducedThisStep
            reducedThisStep = 0
            if !synchronizesBatchNorm {
                try broadcast(network.parameters.filter { !$0.isTrainable }, what: "running statistics broadcast")
            }
        case .stepEnded:
            steps += 1
            stepSeconds += Date().timeIntervalSince(stepStart)
        default:
            break
        }
    }

    /// Replaces `parameters`' values with rank 0's.
    private func broadcast(_ parameters: [Parameter], what: String) throws {
        var values = Array(parameters.map(\.value).joined())
        try communicator.broadcast(&values, what: what)
        var offset = 0
        for parameter in parameters {
            let n = parameter.value.count
            parameter.value = Array(values[offset..<(offset + n)])
            parameter.markUpdated()
            offset += n
        }
    }

    /// One line for people: ranks, bytes and the all-reduce's time and share of the step.
    public var summary: String {
        let perStep = steps > 0 ? reductionSeconds / Double(steps) : 0
        let stepTime = steps > 0 ? stepSeconds / Double(steps) : 0
        return String(
            format: "data-parallel: %d ranks, %.1f MB all-reduced per step, all-reduce %.1f ms of "
                + "%.1f ms per step (%.1f %%)", communicator.size, Double(reducedValuesPerStep * 4) / 1e6,
            perStep * 1000, stepTime * 1000, stepTime > 0 ? 100 * perStep / stepTime : 0)
    }
}
