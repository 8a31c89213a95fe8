import Classical
import SliceLabIO
import SliceLabSupport

/// One post-processing step on a class map (`--regularize`, the classical spec's `regularize=`). Each step is a
/// conforming type listed once in `PostProcessingSteps.all`; its name is what the options take.
protocol PostProcessingStep: Sendable {
    static var name: String { get }
    /// Whether the step needs the model's class probabilities (`PostProcessingContext.probabilities`); a
    /// classical run has none, so `cluster` refuses such a step.
    static var needsProbabilities: Bool { get }
    /// The map after the step.
    static func apply(_ map: LabelGrid<Int32>, context: PostProcessingContext) throws -> LabelGrid<Int32>
}

extension PostProcessingStep {
    static var needsProbabilities: Bool { false }
}

/// What a step may use besides the class map (whose `shape` and `spacing` the steps take as the grid's).
struct PostProcessingContext {
    /// K: the classes the map may hold.
    var classCount: Int
    /// The Potts interaction weight.
    var beta: Double
    /// Builds the data term, `cost(pixel, classIndex)` (for example −log posterior, or the distance to the
    /// class mean), for the steps that use one; nil when there is none and steps take the map as evidence.
    var unaryCost: (() -> (_ pixel: Int, _ classIndex: Int) -> Double)?
    /// The model's class probabilities, pixel-major (`probabilities[pixel × classCount + k]`, pixels row-major
    /// over the map's shape); nil for a classical run.
    var probabilities: [Float]? = nil
    /// The display image at 0–255 (what the overlay shows), pixel-major with `displayChannels` values a pixel.
    var displayImage: [Float]? = nil
    /// 1 (grayscale) or 3 (color).
    var displayChannels = 1
    /// The dense CRF's parameters (`--crf`).
    var crf = DenseCRF.Parameters()
    /// The classes the component rules (`largest-component`, `fill-holes`) apply to; nil for every foreground
    /// class (1..<K).
    var ruleClasses: Set<Int>? = nil
}

/// The registered post-processing steps, in the order `--help` lists them.
enum PostProcessingSteps {
    static let all: [any PostProcessingStep.Type] = [
        NoPostProcessing.self, MajorityFilter.self, PottsMRF.self, DenseCRFStep.self, LargestComponent.self,
        FillHoles.self
    ]

    static func named(_ name: PostProcessingStepName) -> (any PostProcessingStep.Type)? {
        all.first { $0.name == name.rawValue }
    }

    /// Whether the named step needs class probabilities.
    static func needsProbabilities(_ name: PostProcessingStepName) -> Bool {
        named(name)?.needsProbabilities ?? false
    }
}

/// A post-processing step's name, as `--regularize` takes it; the choices are the registered steps.
public struct PostProcessingStepName: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    public let rawValue: String

    /// A registered step's name; nil for any other.
    public init?(rawValue: String) {
        guard PostProcessingSteps.all.contains(where: { $0.name == rawValue }) else { return nil }
        self.rawValue = rawValue
    }

    init(_ name: String) { rawValue = name }

    public static var allCases: [PostProcessingStepName] {
        PostProcessingSteps.all.map { PostProcessingStepName($0.name) }
    }
    public var description: String { rawValue }

    public static let none = PostProcessingStepName(NoPostProcessing.name)
    public static let majority = PostProcessingStepName(MajorityFilter.name)
    public static let mrf = PostProcessingStepName(PottsMRF.name)
    public static let crf = PostProcessingStepName(DenseCRFStep.name)
    public static let largestComponent = PostProcessingStepName(LargestComponent.name)
    public static let fillHoles = PostProcessingStepName(FillHoles.name)

    /// Whether the step works on class probabilities (and so cannot follow a classical run).
    public var needsProbabilities: Bool { PostProcessingSteps.needsProbabilities(self) }
}

/// Post-processing steps applied in order, as MONAI's `Compose` and nnU-Net's post-processing chain them
/// (`largest-component,fill-holes`: keep each class's largest component, then fill its holes). Empty is `none`.
public struct PostProcessingPipeline: Hashable, Sendable, CustomStringConvertible {
    /// The steps in the order they run; `none` never appears in it.
    public private(set) var steps: [PostProcessingStepName]

    public init(_ steps: [PostProcessingStepName]) { self.steps = steps.filter { $0 != .none } }

    /// Steps named in `text` and separated by `separator` (`,` on the command line, `+` inside a classical spec,
    /// whose own fields are separated by commas); `none` alone is the empty pipeline.
    ///
    /// - Throws: `InferenceError.unknownStep` naming the step and the registered ones.
    public init(parsing text: String, separator: Character = ",") throws {
        let names = text.split(separator: separator, omittingEmptySubsequences: false).map(String.init)
        self.init(
            try names.map { name in
                guard let step = PostProcessingStepName(rawValue: name) else {
                    throw InferenceError.unknownStep(
                        name: name, known: PostProcessingStepName.allCases.map(\.rawValue))
                }
                return step
            })
    }

    /// Steps by name, as a stored choice lists them.
    ///
    /// - Throws: `InferenceError.unknownStep`.
    init(steps names: [String]) throws {
        try self.init(parsing: names.isEmpty ? "none" : names.joined(separator: ","))
    }

    /// No post-processing.
    public static let none = PostProcessingPipeline([])

    /// The steps joined by commas, or `none`: what results files and output attributes record.
    public var description: String { steps.isEmpty ? "none" : steps.map(\.rawValue).joined(separator: ",") }

    /// Whether the pipeline runs `step`.
    public func contains(_ step: PostProcessingStepName) -> Bool { steps.contains(step) }

    /// The first step that works on class probabilities (and so cannot follow a classical run), if any.
    public var stepNeedingProbabilities: PostProcessingStepName? { steps.first(where: \.needsProbabilities) }

    /// The map after every step in turn.
    func apply(_ map: LabelGrid<Int32>, context: PostProcessingContext) throws -> LabelGrid<Int32> {
        try steps.reduce(map) { map, name in
            guard let step = PostProcessingSteps.named(name) else {
                preconditionFailure("\(name) is parsed from the registry")
            }
            return try step.apply(map, context: context)
        }
    }
}

/// The name this type had before it was named for what it is (it names the deep post-processing steps too).
@available(*, deprecated, renamed: "PostProcessingStepName")
public typealias ClusterRegularizer = PostProcessingStepName

/// The map as it is.
struct NoPostProcessing: PostProcessingStep {
    static let name = "none"
    static func apply(_ map: LabelGrid<Int32>, context: PostProcessingContext) -> LabelGrid<Int32> { map }
}
