import DeepLab
import Foundation
import SliceLabSupport

/// Where the sampler stands: the generator of the epochs' shuffles, the current epoch's order of samples, the
/// position in it and how many samples all ranks together have drawn. It is global (the same on every rank of a
/// data-parallel job), and saved in checkpoints so a resumed run, with any number of ranks, draws the same
/// batches as an uninterrupted one.
public struct SamplerState: Equatable, Sendable {
    /// The version of the sampling scheme checkpoints record: 2 keys every augmentation draw by the sample's
    /// global index (`drawn` at the time); 1 (before issue #20, no record) drew them in sequence from `random`.
    public static let scheme = 2

    /// Draws the epochs' shuffles only.
    public var random: SeededGenerator
    public var order: [Int]
    public var position: Int
    public var epoch: Int
    /// Samples drawn so far over the whole run (all ranks): the next sample's global index.
    public var drawn: Int
    /// The run's seed, which keys each sample's augmentation draws together with its global index.
    public var seed: UInt64

    /// The state before the first batch: no order yet, so the first batch shuffles.
    public init(seed: UInt64) {
        self.init(random: SeededGenerator(seed: seed), order: [], position: 0, epoch: 0, drawn: 0, seed: seed)
    }

    public init(random: SeededGenerator, order: [Int], position: Int, epoch: Int, drawn: Int, seed: UInt64) {
        self.random = random
        self.order = order
        self.position = position
        self.epoch = epoch
        self.drawn = drawn
        self.seed = seed
    }

    /// The generator of the augmentation draws of the sample with global index `index`: a function of the
    /// seed and the index alone, so a sample is augmented the same whichever rank draws it.
    public func sampleGenerator(_ index: Int) -> SeededGenerator {
        SeededGenerator.stream(seed: Int(Int64(bitPattern: seed)), index: index)
    }
}

/// One training batch (this rank's share of it): images [B, C, H, W] and labels [B, H, W], with the global
/// indices of its samples and the sampler state just after the whole global batch.
public struct TrainingBatch: Sendable {
    public let images: FloatTensor
    public let labels: LabelTensor
    /// Each sample's global index (see `SamplerState.drawn`), which keys its random draws.
    public let sampleIndices: [Int]
    /// The sampler's state after drawing this batch: what a checkpoint taken after this step stores.
    public let stateAfter: SamplerState
}

/// Draws shuffled, augmented batches: each epoch visits every sample once in a fresh random order
/// (batches may straddle epochs), and every sample is augmented with draws keyed by its global index.
///
/// On sets of volumes, a share of the draws (`classSliceProbability`) is replaced by a slice that holds a
/// foreground class chosen uniformly among those present (`classSlices`), with the crop centred on that class:
/// after nnU-Net's foreground oversampling, for slices. These draws too are keyed by the global index.
///
/// Sharded over the `shardCount` ranks of a data-parallel job, every rank walks the same global order and
/// takes the `rank`-th contiguous `batchSize / shardCount` of each global batch, so the ranks together see
/// exactly the samples, augmented exactly as, one process with the same seed sees.
public struct BatchSampler: Sendable {
    public let sampleCount: Int
    /// The global batch size (over all ranks).
    public let batchSize: Int
    public let augmenter: Augmenter
    /// This rank and the number of ranks sharing each batch.
    public let rank: Int
    public let shardCount: Int
    /// Sample i as an image [C, H, W] (already preprocessed) and labels [H, W].
    public let load: @Sendable (Int) throws -> (image: FloatTensor, labels: LabelTensor)
    /// Per foreground class (label 1, 2, …), the samples whose labels hold it: the index built once over a
    /// set's slices. Empty for none.
    public let classSlices: [[Int]]
    /// The probability that a draw is replaced by a slice of `classSlices` (0 for none).
    public let classSliceProbability: Double

    public init(
        sampleCount: Int, batchSize: Int, augmenter: Augmenter,
        rank: Int = 0, shardCount: Int = 1, classSlices: [[Int]] = [], classSliceProbability: Double = 0,
        load: @escaping @Sendable (Int) throws -> (image: FloatTensor, labels: LabelTensor)
    ) throws {
        guard sampleCount > 0 else { throw TrainingError.invalidConfiguration("the training split has no cases") }
        guard batchSize > 0 else { throw TrainingError.invalidConfiguration("the batch size must be positive") }
        guard shardCount >= 1, (0..<shardCount).contains(rank), batchSize % shardCount == 0 else {
            throw TrainingError.invalidConfiguration(
                "the batch size \(batchSize) must be divisible by the number "
                    + "of ranks \(shardCount)")
        }
        self.sampleCount = sampleCount
        self.batchSize = batchSize
        self.rank = rank
        self.shardCount = shardCount
        self.augmenter = augmenter
        self.load = load
        guard (0...1).contains(classSliceProbability),
            classSlices.joined().allSatisfy({ (0..<sampleCount).contains($0) })
        else {
            throw TrainingError.invalidConfiguration(
                "class-balanced slice sampling needs a probability in 0...1 "
                    + "and slices within the \(sampleCount) samples")
        }
        self.classSlices = classSlices
        self.classSliceProbability = classSliceProbability
    }

    /// Which class's slice replaces a draw, if any: with probability `classSliceProbability`, a class drawn
    /// uniformly among those with slices, and one of its slices drawn uniformly.
    func classBalancedChoice(random: inout SeededGenerator) -> (sample: Int, label: Int32)? {
        guard classSliceProbability > 0 else { return nil }
        let present = classSlices.indices.filter { !classSlices[$0].isEmpty }
        guard !present.isEmpty, random.bernoulli(classSliceProbability) else { return nil }
        let chosen = present[random.index(below: present.count)]
        let slices = classSlices[chosen]
        return (slices[random.index(below: slices.count)], Int32(chosen + 1))
    }

    /// This rank's share of each global batch.
    public var localBatchSize: Int { batchSize / shardCount }

    /// This rank's share of the global batch drawn from `state`, which moves past the whole global batch.
    ///
    /// - Throws: what `load` throws; `TrainingError.shapeMismatch` when augmented samples differ in size
    ///   (set a crop size) or in channels.
    public func nextBatch(_ state: inout SamplerState) throws -> TrainingBatch {
        var images: [Float] = []
        var labels: [Int32] = []
        var sampleShape: [Int]?
        var indices: [Int] = []
        for slot in 0..<batchSize {
            if state.position >= state.order.count {
                state.order = Array(0..<sampleCount)
                state.order.shuffle(using: &state.random)
                state.position = 0
                state.epoch += 1
            }
            let drawn = state.order[state.position]
            state.position += 1
            let globalIndex = state.drawn
            state.drawn += 1
            guard slot / localBatchSize == rank else { continue }
            var random = state.sampleGenerator(globalIndex)
            let choice = classBalancedChoice(random: &random)
            let sample = try load(choice?.sample ?? drawn)
            let augmented = try augmenter.augment(
                image: sample.image, labels: sample.labels, random: &random,
                focusClass: choice?.label)
            indices.append(globalIndex)
            if let sampleShape, sampleShape != augmented.image.shape {
                throw TrainingError.shapeMismatch(
                    what: "samples of one batch (set a crop size to train on images "
                        + "of different sizes)", expected: sampleShape,
                    actual: augmented.image.shape)
            }
            sampleShape = augmented.image.shape
            images += augmented.image.values
            labels += augmented.labels.values
        }
        let shape = sampleShape ?? [0, 0, 0]
        return TrainingBatch(
            images: FloatTensor(shape: [localBatchSize] + shape, values: images),
            labels: LabelTensor(shape: [localBatchSize, shape[1], shape[2]], values: labels),
            sampleIndices: indices, stateAfter: state)
    }
}

/// Prepares batches on a background thread, at most `depth` ahead, so the compute never waits for loading
/// and augmentation. The sequence is exactly `BatchSampler.nextBatch` applied repeatedly from `state`.
// @unchecked Sendable: the queue and flags are touched only under `condition` (an NSCondition), by the producer
// thread and the consumer.
public final class BatchPrefetcher: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [Result<TrainingBatch, Error>] = []
    private var stopped = false
    private var producerFinished = false
    private let depth: Int
    private var thread: Thread?

    public init(sampler: BatchSampler, state: SamplerState, depth: Int = 2) {
        self.depth = max(1, depth)
        let thread = Thread { [weak self] in self?.produce(sampler: sampler, state: state) }
        thread.name = "slicelab.batches"
        self.thread = thread
        thread.start()
    }

    deinit { stop() }

    private func produce(sampler: BatchSampler, state: SamplerState) {
        var state = state
        while true {
            let result = Result { try sampler.nextBatch(&state) }
            condition.lock()
            while queue.count >= depth && !stopped { condition.wait() }
            if stopped {
                condition.unlock()
                return
            }
            queue.append(result)
            if case .failure = result { producerFinished = true }
            condition.broadcast()
            condition.unlock()
            if producerFinished { return }
        }
    }

    /// The next batch, waiting for it if the producer is behind.
    ///
    /// - Throws: the error that stopped the producer (a bad sample), or `invalidConfiguration` after `stop()`.
    public func next() throws -> TrainingBatch {
        condition.lock()
        defer { condition.unlock() }
        while queue.isEmpty && !stopped && !producerFinished { condition.wait() }
        guard !queue.isEmpty else { throw TrainingError.invalidConfiguration("the batch prefetcher has stopped") }
        let result = queue.removeFirst()
        condition.broadcast()
        return try result.get()
    }

    /// Stops the producer thread; batches not yet taken are dropped.
    public func stop() {
        condition.lock()
        stopped = true
        queue.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}
