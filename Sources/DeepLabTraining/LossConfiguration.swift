import DeepLab

/// Which loss to train with and its options, as the CLI names them (`ce`, `dice`, `dicece`, `focal`). Stored
/// with the checkpoint's training configuration.
public struct LossConfiguration: Codable, Equatable, Sendable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case crossEntropy = "ce"
        case dice
        case diceCE = "dicece"
        case focal
    }

    public var kind: Kind
    /// One weight per class for cross-entropy (and Dice in `dicece`, as MONAI does), or nil.
    public var classWeights: [Double]?
    /// Whether Dice counts the background class.
    public var includeBackground: Bool
    public var focalGamma: Double
    /// Labels with this value (the augmentation's padding, by default) contribute nothing.
    public var ignoreLabel: Int32

    public init(
        kind: Kind = .diceCE, classWeights: [Double]? = nil, includeBackground: Bool = true,
        focalGamma: Double = 2, ignoreLabel: Int32 = -100
    ) {
        self.kind = kind
        self.classWeights = classWeights
        self.includeBackground = includeBackground
        self.focalGamma = focalGamma
        self.ignoreLabel = ignoreLabel
    }

    /// The loss.
    ///
    /// - Throws: `TrainingError.invalidConfiguration` when the class weights do not number `classCount` or
    ///   one is negative.
    public func makeLoss(classCount: Int) throws -> SegmentationLoss {
        if let classWeights {
            guard classWeights.count == classCount, classWeights.allSatisfy({ $0 >= 0 && $0.isFinite }) else {
                throw TrainingError.invalidConfiguration(
                    "class weights must be \(classCount) values ≥ 0, one per "
                        + "class; got \(classWeights)")
            }
        }
        switch kind {
        case .crossEntropy: return CrossEntropyLoss(classWeights: classWeights, ignoreLabel: ignoreLabel)
        case .dice:
            return DiceLoss(includeBackground: includeBackground, classWeights: classWeights, ignoreLabel: ignoreLabel)
        case .diceCE:
            return DiceCELoss(
                includeBackground: includeBackground, classWeights: classWeights,
                ignoreLabel: ignoreLabel)
        case .focal: return FocalLoss(gamma: focalGamma, classWeights: classWeights, ignoreLabel: ignoreLabel)
        }
    }
}
