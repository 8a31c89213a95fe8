import Classical

/// One classical method of `slicelab cluster` and `compare --classical`: it turns an image's pixels (points in
/// the chosen colour space) into K clusters. Each method is a conforming type listed once in
/// `ClassicalMethods.all`; its name is what `--method` and the spec take.
protocol ClassicalMethod: Sendable {
    static var name: String { get }
    /// Whether the method can make a single class (the clustering methods can; thresholds cannot).
    static var makesOneClass: Bool { get }
    /// Throws `InferenceError` when the method cannot make `classes` classes.
    static func check(classes: Int) throws
    /// Clusters `features` into `options.classes` clusters, in any order (the workflow orders them).
    static func cluster(_ features: ClassicalSegmentation.Features, options: ClusterOptions) throws -> Clustering
}

extension ClassicalMethod {
    static var makesOneClass: Bool { true }

    static func check(classes: Int) throws {
        guard classes >= 2 || makesOneClass else { throw InferenceError.tooFewClasses(method: ClusterMethod(name)) }
    }
}

/// A method's clusters, before they are ordered by intensity.
struct Clustering {
    var labels: [Int32]
    /// K × D cluster centres in the chosen space.
    var centers: FeatureMatrix?
    /// K − 1 ascending thresholds.
    var thresholds: [Double]?
    var inertia: Double?
    var iterations = 1
}

/// The registered classical methods, in the order `--help` lists them.
enum ClassicalMethods {
    static let all: [any ClassicalMethod.Type] = [
        OtsuMethod.self, MultiOtsuMethod.self, HistogramMethod.self, KMeansMethod.self, FuzzyCMeansMethod.self,
        GaussianMixtureMethod.self
    ]

    static func named(_ name: ClusterMethod) -> (any ClassicalMethod.Type)? {
        all.first { $0.name == name.rawValue }
    }
}

/// A classical method's name, as `--method` and `compare --classical` take it; the choices are the registered
/// methods.
public struct ClusterMethod: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    public let rawValue: String

    /// A registered method's name; nil for any other.
    public init?(rawValue: String) {
        guard ClassicalMethods.all.contains(where: { $0.name == rawValue }) else { return nil }
        self.rawValue = rawValue
    }

    init(_ name: String) { rawValue = name }

    public static var allCases: [ClusterMethod] { ClassicalMethods.all.map { ClusterMethod($0.name) } }
    public var description: String { rawValue }

    public static let otsu = ClusterMethod(OtsuMethod.name), multiotsu = ClusterMethod(MultiOtsuMethod.name)
    public static let histogram = ClusterMethod(HistogramMethod.name), kmeans = ClusterMethod(KMeansMethod.name)
    public static let fcm = ClusterMethod(FuzzyCMeansMethod.name), gmm = ClusterMethod(GaussianMixtureMethod.name)
}
