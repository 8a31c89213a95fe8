import Classical
import SliceLabSupport

/// One post-processing step on a class map (`--regularize`, the classical spec's `regularize=`). Each step is a
/// conforming type listed once in `PostProcessingSteps.all`; its name is what the options take.
protocol PostProcessingStep {
    static var name: String { get }
    /// The map after the step.
    static func apply(_ map: LabelGrid<Int32>, context: PostProcessingContext) throws -> LabelGrid<Int32>
}

/// What a step may use besides the class map.
struct PostProcessingContext {
    /// K: the classes the map may hold.
    var classCount: Int
    /// The Potts interaction weight.
    var beta: Double
    /// Builds the data term, `cost(pixel, classIndex)` (for example −log posterior, or the distance to the
    /// class mean), for the steps that use one; nil when there is none and steps take the map as evidence.
    var unaryCost: (() -> (_ pixel: Int, _ classIndex: Int) -> Double)?
}

/// The registered post-processing steps, in the order `--help` lists them.
enum PostProcessingSteps {
    static let all: [any PostProcessingStep.Type] = [NoPostProcessing.self, MajorityFilter.self, PottsMRF.self]

    static func named(_ name: ClusterRegularizer) -> (any PostProcessingStep.Type)? {
        all.first { $0.name == name.rawValue }
    }
}

/// A post-processing step's name, as `--regularize` takes it; the choices are the registered steps.
public struct ClusterRegularizer: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    public let rawValue: String

    /// A registered step's name; nil for any other.
    public init?(rawValue: String) {
        guard PostProcessingSteps.all.contains(where: { $0.name == rawValue }) else { return nil }
        self.rawValue = rawValue
    }

    init(_ name: String) { rawValue = name }

    public static var allCases: [ClusterRegularizer] { PostProcessingSteps.all.map { ClusterRegularizer($0.name) } }
    public var description: String { rawValue }

    public static let none = ClusterRegularizer(NoPostProcessing.name)
    public static let majority = ClusterRegularizer(MajorityFilter.name)
    public static let mrf = ClusterRegularizer(PottsMRF.name)
}

/// The map as it is.
struct NoPostProcessing: PostProcessingStep {
    static let name = "none"
    static func apply(_ map: LabelGrid<Int32>, context: PostProcessingContext) -> LabelGrid<Int32> { map }
}
