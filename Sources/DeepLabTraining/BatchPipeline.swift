import DeepLab
import Foundation
import SliceLabSupport

/// Where the sampler stands: its random generator, the current epoch's order of samples and the position in
/// it. Saved in checkpoints so a resumed run draws the same batches as an uninterrupted one.
public struct SamplerState: Equatable, Sendable {
    public var random: SeededGenerator
    public var order: [Int]
    public var position: Int
    public var epoch: Int

    /// The state before the first batch: no order yet, so the first batch shuffles.
    public init(seed: UInt64) {
        self.init(random: SeededGenerator(seed: seed), order: [], position: 0, epoch: 0)
    }

    public init(random: SeededGenerator, order: [Int], position: Int, epoch: Int) {
        self.random = random
        self.order = order
        self.position = position
        self.epoch = epoch
    }
}

/// One training batch: images [B, C, H, W] and labels [B, H, W], with the sampler state just after it.
public struct TrainingBatch: Sendable {
    public let images: FloatTensor
    public let labels: LabelTensor
    /// The sampler's state after drawing this batch: what a checkpoint taken after this step stores.
    public let stateAfter: SamplerState
}

/// Draws shuffled, augmented batches: each epoch visits every sample once in a fresh random order
/// (batches may straddle epochs), and every sample is augmented with draws from the same generator.
public struct BatchSampler: Sendable {
    public let sampleCount: Int
    public let batchSize: Int
    public let augmenter: Augmenter
    /// Sample i as an image [C, H, W] (already preprocessed) and labels [H, W].
    public let load: @Sendable (Int) throws -> (image: FloatTensor, labels: LabelTensor)

    public init(sampleCount: Int, batchSize: Int, augmenter: Augmenter,
                load: @escaping @Sendable (Int) throws -> (image: FloatTensor, labels: LabelTensor)) throws {
        guard sampleCount > 0 else { throw TrainingError.invalidConfiguration("the training split has no cases") }
        guard batchSize > 0 else { throw TrainingError.invalidConfiguration("the batch size must be positive") }
        self.sampleCount = sampleCount
        self.batchSize = batchSize
        self.augmenter = augmenter
        self.load = load
    }

    /// The batch drawn from `state`, which moves past it.
    ///
    /// - Throws: what `load` throws; `TrainingError.shapeMismatch` when augmented samples differ in size
    ///   (set a crop size) or in channels.
    public func nextBatch(_ state: inout SamplerState) throws -> TrainingBatch {
        var images: [Float] = [], labels: [Int32] = []
        var sampleShape: [Int]?
        for _ in 0..<batchSize {
            if state.position >= state.order.count {
                state.order = Array(0..<sampleCount)
                state.order.shuffle(using: &state.random)
                state.position = 0
                state.epoch += 1
            }
            let index = state.order[state.position]
            state.position += 1
            let sample = try load(index)
            let augmented = try augmenter.augment(image: sample.image, labels: sample.labels, random: &state.random)
            if let sampleShape, sampleShape != augmented.image.shape {
                throw TrainingError.shapeMismatch(what: "samples of one batch (set a crop size to train on images "
                                                  + "of different sizes)", expected: sampleShape,
                                                  actual: augmented.image.shape)
            }
            sampleShape = augmented.image.shape
            images += augmented.image.values
            labels += augmented.labels.values
        }
        let shape = sampleShape ?? [0, 0, 0]
        return TrainingBatch(images: FloatTensor(shape: [batchSize] + shape, values: images),
                             labels: LabelTensor(shape: [batchSize, shape[1], shape[2]], values: labels),
                             stateAfter: state)
    }
}

/// Prepares batches on a background thread, at most `depth` ahead, so the compute never waits for loading
/// and augmentation. The sequence is exactly `BatchSampler.nextBatch` applied repeatedly from `state`.
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
