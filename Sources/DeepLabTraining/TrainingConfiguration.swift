import DeepLab

/// Everything that defines a training run, stored as JSON in the checkpoint (`/training@configuration`) so a
/// run can be resumed and a model traced back to how it was made.
public struct TrainingConfiguration: Codable, Equatable, Sendable {
    public var classCount: Int
    /// Total optimizer steps.
    public var steps: Int
    public var batchSize: Int
    /// Validate (and checkpoint) every this many steps, and after the last step.
    public var validateEvery: Int
    public var schedule: LearningRateSchedule
    public var optimizer: OptimizerConfiguration
    public var loss: LossConfiguration
    /// Clip gradients to this global L2 norm, or nil.
    public var gradientClipNorm: Double?
    /// Stop after this many validations without a better mean foreground Dice, or nil.
    public var earlyStoppingPatience: Int?
    public var seed: UInt64
    public var augmentation: AugmentationConfiguration
    public var preprocessing: Preprocessing
    /// Batches prepared ahead on the background thread.
    public var prefetchDepth: Int
    /// On sets of volumes: the probability that a drawn slice is replaced by one holding a randomly chosen
    /// foreground class (`BatchSampler.classSlices`); nil (2-D sets, and checkpoints before it) for none.
    public var classBalancedSliceProbability: Double?

    public init(
        classCount: Int, steps: Int, batchSize: Int, validateEvery: Int, schedule: LearningRateSchedule,
        optimizer: OptimizerConfiguration, loss: LossConfiguration = LossConfiguration(),
        gradientClipNorm: Double? = nil, earlyStoppingPatience: Int? = nil, seed: UInt64 = 0,
        augmentation: AugmentationConfiguration = AugmentationConfiguration(),
        preprocessing: Preprocessing = .none, prefetchDepth: Int = 2,
        classBalancedSliceProbability: Double? = nil
    ) {
        self.classCount = classCount
        self.steps = steps
        self.batchSize = batchSize
        self.validateEvery = validateEvery
        self.schedule = schedule
        self.optimizer = optimizer
        self.loss = loss
        self.gradientClipNorm = gradientClipNorm
        self.earlyStoppingPatience = earlyStoppingPatience
        self.seed = seed
        self.augmentation = augmentation
        self.preprocessing = preprocessing
        self.prefetchDepth = prefetchDepth
        self.classBalancedSliceProbability = classBalancedSliceProbability
    }

    /// Checks the values that cannot work.
    ///
    /// - Throws: `TrainingError.invalidConfiguration` naming the first.
    public func validate() throws {
        func check(_ condition: Bool, _ message: String) throws {
            if !condition { throw TrainingError.invalidConfiguration(message) }
        }
        try check(classCount >= 2, "at least 2 classes are needed, not \(classCount)")
        try check(
            steps >= 1 && batchSize >= 1 && validateEvery >= 1, "steps, batch size and validation interval must be ≥ 1")
        try check(
            schedule.baseLearningRate > 0 && schedule.baseLearningRate.isFinite,
            "the learning rate must be positive, not \(schedule.baseLearningRate)")
        try check(schedule.warmupSteps >= 0 && schedule.warmupSteps < steps, "warm-up must be shorter than the run")
        try check(gradientClipNorm.map { $0 > 0 } ?? true, "the clipping norm must be positive")
        try check(earlyStoppingPatience.map { $0 >= 1 } ?? true, "early-stopping patience must be ≥ 1")
        try check(
            classBalancedSliceProbability.map { (0...1).contains($0) } ?? true,
            "the class-balanced slice probability must be in 0...1")
        try augmentation.validate()
        try preprocessing.validate()
        _ = try loss.makeLoss(classCount: classCount)
    }
}

/// What a run has recorded: per step the training loss, learning rate and gradient norm; per validation
/// its step, loss, per-class Dice and IoU and the mean foreground Dice. Written to `/history/…`.
public struct TrainingHistory: Equatable, Sendable {
    public var trainLoss: [Double] = []
    public var learningRate: [Double] = []
    public var gradientNorm: [Double] = []
    public var validationStep: [Int] = []
    public var validationLoss: [Double] = []
    /// [validations][classes]
    public var validationDice: [[Double]] = []
    public var validationIoU: [[Double]] = []
    public var validationMeanDice: [Double] = []

    public init() {}
}

/// The mutable state of a run at a step boundary: all that exact resumption needs besides the parameters.
public struct TrainingState: Equatable, Sendable {
    /// Steps completed.
    public var step: Int
    public var sampler: SamplerState
    public var optimizer: OptimizerState
    public var history: TrainingHistory
    /// The best mean foreground Dice so far and its step.
    public var bestScore: Double?
    public var bestStep: Int?
    public var validationsWithoutImprovement: Int

    public init(
        step: Int, sampler: SamplerState, optimizer: OptimizerState, history: TrainingHistory = TrainingHistory(),
        bestScore: Double? = nil, bestStep: Int? = nil, validationsWithoutImprovement: Int = 0
    ) {
        self.step = step
        self.sampler = sampler
        self.optimizer = optimizer
        self.history = history
        self.bestScore = bestScore
        self.bestStep = bestStep
        self.validationsWithoutImprovement = validationsWithoutImprovement
    }
}
