import DeepLab
import Foundation

/// The learning rate as a function of the step: linear warm-up, then the poly decay of DeepLab
/// (Chen et al., arXiv:1706.05587): lr = base·(1 − s/T)^power. A pure function of the step, so resuming needs
/// only the step.
public struct LearningRateSchedule: Codable, Equatable, Sendable {
    public var baseLearningRate: Double
    /// All steps of the run, warm-up included.
    public var totalSteps: Int
    public var power: Double
    public var warmupSteps: Int
    /// The fraction of the base rate at step 0 of the warm-up (`torch.optim.lr_scheduler.LinearLR`'s start_factor).
    public var warmupStartFactor: Double

    public init(
        baseLearningRate: Double, totalSteps: Int, power: Double = 0.9, warmupSteps: Int = 0,
        warmupStartFactor: Double = 0.1
    ) {
        self.baseLearningRate = baseLearningRate
        self.totalSteps = totalSteps
        self.power = power
        self.warmupSteps = warmupSteps
        self.warmupStartFactor = warmupStartFactor
    }

    /// The rate for step `step` (0-based): during warm-up `LinearLR(start_factor, total_iters=warmupSteps)`,
    /// after it `PolynomialLR(total_iters=totalSteps − warmupSteps, power)` counted from the warm-up's end.
    public func learningRate(atStep step: Int) -> Double {
        if step < warmupSteps {
            return baseLearningRate
                * (warmupStartFactor + (1 - warmupStartFactor) * Double(step) / Double(warmupSteps))
        }
        let decaySteps = max(1, totalSteps - warmupSteps)
        let progress = Double(min(step - warmupSteps, decaySteps)) / Double(decaySteps)
        return baseLearningRate * pow(1 - progress, power)
    }
}
