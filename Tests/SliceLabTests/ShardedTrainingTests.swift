import DeepLab
import DeepLabTraining
import Foundation
import SliceLabSupport
import Testing

/// The single-process halves of data-parallel training, without MPI: the sharded sampler and the losses'
/// normaliser sums.
struct ShardedTrainingTests {
    /// Two shards of each global batch of 4, concatenated, are the one-process batch: same samples, same
    /// augmentation (drawn by global index), same sampler state after, across epoch boundaries.
    @Test func shardsTogetherAreTheOneProcessBatch() throws {
        let images = (0..<5).map { i in FloatTensor(shape: [1, 10, 10], values: (0..<100).map { Float($0 * (i + 1)) }) }
        let labels = LabelTensor(shape: [10, 10], values: (0..<100).map { Int32($0 % 3) })
        let augmenter = try Augmenter(AugmentationConfiguration(cropSize: 8))
        let whole = try BatchSampler(sampleCount: 5, batchSize: 4, augmenter: augmenter) { (images[$0], labels) }
        let shards = try (0..<2).map { rank in
            try BatchSampler(sampleCount: 5, batchSize: 4, augmenter: augmenter, rank: rank, shardCount: 2) {
                (images[$0], labels)
            }
        }
        var state = SamplerState(seed: 11)
        var shardStates = [state, state]
        for _ in 0..<4 {
            let expected = try whole.nextBatch(&state)
            let parts = try (0..<2).map { try shards[$0].nextBatch(&shardStates[$0]) }
            #expect(parts[0].images.values + parts[1].images.values == expected.images.values)
            #expect(parts[0].labels.values + parts[1].labels.values == expected.labels.values)
            #expect(parts[0].sampleIndices + parts[1].sampleIndices == expected.sampleIndices)
            #expect(shardStates[0] == state && shardStates[1] == state)
        }
        #expect(state.drawn == 16)
        #expect(throws: TrainingError.self) {
            try BatchSampler(sampleCount: 5, batchSize: 3, augmenter: augmenter, rank: 0, shardCount: 2) {
                (images[$0], labels)
            }
        }
    }

    /// Each loss evaluated on two halves of a batch, with its normaliser summed over the halves, gives the whole
    /// batch's loss, and the halves' gradients are the whole gradient's halves (within 1e-6 relative).
    @Test(arguments: [LossConfiguration.Kind.crossEntropy, .dice, .diceCE, .focal])
    func halvesWithSummedNormalisersAreTheWholeBatch(kind: LossConfiguration.Kind) throws {
        var random = SeededGenerator(seed: 5)
        let (batch, classes, pixels) = (4, 3, 36)
        let logits = FloatTensor(
            shape: [batch, classes, 6, 6],
            values: (0..<(batch * classes * pixels)).map { _ in Float(random.normal()) })
        // Some ignored pixels, more in the second half, so the halves' normalisers differ.
        let labels = LabelTensor(
            shape: [batch, 6, 6],
            values: (0..<(batch * pixels)).map { index in
                random.bernoulli(index < 2 * pixels ? 0.1 : 0.4) ? -100 : Int32(random.index(below: classes))
            })
        let loss = try LossConfiguration(kind: kind, classWeights: [1, 2, 0.5]).makeLoss(classCount: classes)
        let expected = try loss.evaluate(logits: logits, labels: labels)
        func half(_ h: Int) -> (FloatTensor, LabelTensor) {
            let (l, p) = (classes * pixels * 2, pixels * 2)
            return (
                FloatTensor(shape: [2, classes, 6, 6], values: Array(logits.values[(h * l)..<((h + 1) * l)])),
                LabelTensor(shape: [2, 6, 6], values: Array(labels.values[(h * p)..<((h + 1) * p)]))
            )
        }
        // Pass 1 records what each half contributes to each sum; pass 2 hands each half the total.
        var recorded: [[[Double]]] = [[], []]
        for h in 0..<2 {
            let (x, y) = half(h)
            _ = try loss.evaluate(logits: x, labels: y) { values in recorded[h].append(values) }
        }
        #expect(recorded[0].count == recorded[1].count && !recorded[0].isEmpty)
        var gradient: [Float] = []
        for h in 0..<2 {
            let (x, y) = half(h)
            var call = 0
            let result = try loss.evaluate(logits: x, labels: y) { values in
                values = zip(recorded[0][call], recorded[1][call]).map { $0 + $1 }
                call += 1
            }
            #expect(
                abs(result.loss - expected.loss) <= 1e-6 * abs(expected.loss),
                "\(kind): \(result.loss) vs \(expected.loss)")
            gradient += result.gradient.values
        }
        let scale = expected.gradient.values.map { abs($0) }.max() ?? 1
        let worst = zip(gradient, expected.gradient.values).map { abs($0 - $1) }.max() ?? 0
        #expect(worst <= 1e-6 * scale, "\(kind): gradient differs by \(worst) of \(scale)")
    }
}
