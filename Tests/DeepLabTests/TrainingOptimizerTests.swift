import Foundation
import SliceLabSupport
import Testing

@testable import DeepLab
@testable import DeepLabTraining

/// SGD and AdamW trajectories against torch.optim, clipping against clip_grad_norm_, and the schedule against
/// torch's PolynomialLR and LinearLR (goldens from Datasets/goldens/training_goldens.py).
struct TrainingOptimizerTests {
    static func configuration(_ golden: [String: Any]) throws -> OptimizerConfiguration {
        let options = golden["options"] as? [String: Any] ?? [:]
        func number(_ key: String, _ fallback: Double) -> Double {
            (options[key] as? NSNumber)?.doubleValue ?? fallback
        }
        if golden["kind"] as? String == "sgd" {
            return .sgd(
                SGD.Configuration(
                    momentum: number("momentum", 0), dampening: number("dampening", 0),
                    weightDecay: number("weight_decay", 0),
                    nesterov: (options["nesterov"] as? Bool) ?? false))
        }
        let betas = try TrainingGoldens.doubles(options["betas"])
        return .adamW(
            AdamW.Configuration(
                beta1: betas[0], beta2: betas[1], epsilon: number("eps", 1e-8),
                weightDecay: number("weight_decay", 0.01)))
    }

    static var optimizerSection: [String: Any] {
        (try? TrainingGoldens.section("optimizers")) as? [String: Any] ?? [:]
    }

    static func parameters() throws -> [Parameter] {
        let shapes = (optimizerSection["shapes"] as? [[NSNumber]] ?? []).map { $0.map(\.intValue) }
        let initial = Self.optimizerSection["initial"] as? [Any] ?? []
        return try zip(shapes, initial).enumerated().map { index, pair in
            Parameter(name: "p\(index)", shape: pair.0, value: try TrainingGoldens.floats(pair.1))
        } + [Parameter(name: "buffer", shape: [2], value: [1, 2], isTrainable: false)]
    }

    /// Tolerance: 1e-5 relative (both sides Float32; the update order is PyTorch's) plus 1e-6 absolute.
    @Test(arguments: TrainingGoldens.optimizerCaseIndices)
    func optimizerFollowsTorchOptimStepByStep(index: Int) throws {
        let golden = try TrainingGoldens.optimizerCase(index)
        let parameters = try Self.parameters()
        let optimizer = try Self.configuration(golden).makeOptimizer(parameters: parameters)
        let gradients = Self.optimizerSection["gradients"] as? [[Any]] ?? []
        let rates = try TrainingGoldens.doubles(Self.optimizerSection["learning_rates"])
        let trajectory = golden["values_after_each_step"] as? [[Any]] ?? []
        #expect(!trajectory.isEmpty && trajectory.count == gradients.count)
        for (step, expected) in trajectory.enumerated() {
            for (parameter, gradient) in zip(parameters, gradients[step]) {
                parameter.gradient = try TrainingGoldens.floats(gradient)
            }
            optimizer.step(learningRate: rates[step])
            for (parameter, values) in zip(parameters, expected) {
                let want = try TrainingGoldens.doubles(values)
                #expect(
                    isClose(parameter.value.map(Double.init), want, relative: 1e-5, absolute: 1e-6),
                    "\(golden["kind"] ?? "") \(golden["options"] ?? ""): step \(step + 1), \(parameter.name)")
            }
        }
        #expect(parameters.last?.value == [1, 2], "buffers are never updated")
    }

    /// Resuming from a saved state continues exactly as the uninterrupted optimizer does.
    @Test(arguments: TrainingGoldens.optimizerCaseIndices)
    func restoredStateContinuesBitForBit(index: Int) throws {
        let golden = try TrainingGoldens.optimizerCase(index)
        let configuration = try Self.configuration(golden)
        let gradients = Self.optimizerSection["gradients"] as? [[Any]] ?? []
        let (straight, resumed) = (try Self.parameters(), try Self.parameters())
        let first = configuration.makeOptimizer(parameters: straight)
        var second = configuration.makeOptimizer(parameters: resumed)
        for step in 0..<gradients.count {
            if step == 3 {  // interrupt: a new optimizer continues from the state
                let state = second.state()
                second = configuration.makeOptimizer(parameters: resumed)
                try second.restore(state)
            }
            for parameters in [straight, resumed] {
                for (parameter, gradient) in zip(parameters, gradients[step]) {
                    parameter.gradient = try TrainingGoldens.floats(gradient)
                }
            }
            first.step(learningRate: 0.05)
            second.step(learningRate: 0.05)
        }
        #expect(zip(straight, resumed).allSatisfy { $0.value == $1.value })
        #expect(first.stepCount == second.stepCount)
    }

    /// Large parameters are updated in slices on several threads; every element must come out exactly as the
    /// single-threaded update of a small parameter gives it (the head and tail of the large one, stepped alone).
    @Test(arguments: [
        OptimizerConfiguration.sgd(SGD.Configuration(momentum: 0.9, weightDecay: 1e-4, nesterov: true)),
        .adamW(AdamW.Configuration())
    ])
    func slicedUpdatesEqualWholeOnes(configuration: OptimizerConfiguration) {
        var generator = SeededGenerator(seed: 12)
        let count = 100_003
        let values = (0..<count).map { _ in generator.symmetricUniform() }
        let gradients = (0..<3).map { _ in (0..<count).map { _ in generator.symmetricUniform() } }
        let ends = Array(0..<500) + Array((count - 500)..<count)
        let large = Parameter(name: "large", shape: [count], value: values)
        let small = Parameter(name: "small", shape: [ends.count], value: ends.map { values[$0] })
        let optimizers = [
            configuration.makeOptimizer(parameters: [large]),
            configuration.makeOptimizer(parameters: [small])
        ]
        for g in gradients {
            large.gradient = g
            small.gradient = ends.map { g[$0] }
            for optimizer in optimizers { optimizer.step(learningRate: 0.01) }
        }
        let differing = zip(ends.map { large.value[$0] }, small.value).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) of \(ends.count) elements differ")
        #expect(large.value != values)
    }

    @Test func clippingMatchesClipGradNorm() throws {
        let section = try #require(try TrainingGoldens.section("clipping") as? [String: Any])
        let gradients = try (section["gradients"] as? [Any] ?? []).map(TrainingGoldens.floats)
        for golden in try TrainingGoldens.dictionaries(section["cases"]) {
            let parameters = gradients.enumerated().map { index, g in
                let parameter = Parameter(
                    name: "g\(index)", shape: [g.count], value: [Float](repeating: 0, count: g.count))
                parameter.gradient = g
                return parameter
            }
            let maxNorm = try #require(golden["max_norm"] as? NSNumber).doubleValue
            let norm = clipGradientNorm(parameters, maxNorm: maxNorm)
            let expectedNorm = try #require(golden["total_norm"] as? NSNumber).doubleValue
            #expect(abs(norm - expectedNorm) <= 1e-5 * expectedNorm)
            let clipped = try (golden["clipped"] as? [Any] ?? []).map(TrainingGoldens.doubles)
            for (parameter, expected) in zip(parameters, clipped) {
                #expect(isClose(parameter.gradient.map(Double.init), expected, relative: 1e-5, absolute: 1e-7))
            }
        }
    }

    @Test func scheduleMatchesPolynomialAndLinearLR() throws {
        let section = try #require(try TrainingGoldens.section("schedules") as? [String: Any])
        let base = try #require(section["base"] as? NSNumber).doubleValue
        let poly = try #require(section["poly"] as? [String: Any])
        let polyRates = try TrainingGoldens.doubles(poly["rates"])
        let decay = LearningRateSchedule(baseLearningRate: base, totalSteps: 50, power: 0.9)
        #expect(
            isClose(
                polyRates.indices.map { decay.learningRate(atStep: $0) }, polyRates,
                relative: 1e-9, absolute: 1e-15))
        let warmup = try #require(section["warmup"] as? [String: Any])
        let warmupRates = try TrainingGoldens.doubles(warmup["rates"])
        let withWarmup = LearningRateSchedule(
            baseLearningRate: base, totalSteps: 60, power: 0.9, warmupSteps: 10,
            warmupStartFactor: 0.1)
        #expect(
            isClose(
                warmupRates.indices.map { withWarmup.learningRate(atStep: $0) }, warmupRates,
                relative: 1e-9, absolute: 1e-15))
        // After the warm-up, the poly decay restarts from the base rate over the remaining 50 steps.
        #expect(
            isClose(
                (10..<60).map { withWarmup.learningRate(atStep: $0) }, Array(polyRates.prefix(50)),
                relative: 1e-9, absolute: 1e-15))
    }

    @Test func restoringAnotherOptimizersStateIsATypedError() throws {
        let parameters = try Self.parameters()
        let sgd = SGD(parameters: parameters)
        sgd.step(learningRate: 0.1)
        #expect(throws: TrainingError.self) { try AdamW(parameters: parameters).restore(sgd.state()) }
    }
}
