import Classical

/// A classical configuration for `slicelab compare --classical`, e.g. `kmeans:space=gray,classes=3,map=train-vote`.
///
/// Keys (all optional): `space` (gray, rgb, rgbnorm, hsv, lab, ycbcr; default gray), `classes` (clusters; default
/// the set's class count), `map` (how clusters become the set's classes: `train-vote` learns a majority vote
/// on the training split — the fair baseline, default; `intensity` takes cluster i as class i; `oracle`
/// matches clusters to the reference of each evaluated case by the Hungarian method — an upper bound, always
/// named as such), `seed`, `n-init`, `regularize` (none, majority, mrf, largest-component, fill-holes; not
/// crf, which needs probabilities), `min-region`, `connectivity` (1, 2), `name` (the run's name).
public struct ClassicalSpec: Sendable, Equatable {
    public enum Mapping: String, Sendable, CaseIterable {
        case trainVote = "train-vote"
        case intensity
        case oracle
    }

    public var text: String
    public var method: ClusterMethod
    public var space: ColorSpace
    public var clusters: Int?
    public var mapping: Mapping
    public var seed: Int
    public var initCount: Int
    /// Post-processing steps joined by `+` in the spec (`regularize=majority+fill-holes`).
    public var regularize: PostProcessingPipeline
    public var minRegion: Int
    public var connectivity: Int
    public var name: String?

    /// Parses a specification. - Throws: `InferenceError.invalidClassicalSpec` naming the spec and the bad key or value.
    public init(_ text: String) throws {
        func bad(_ reason: String) -> InferenceError { .invalidClassicalSpec(text: text, reason: reason) }
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard let methodName = parts.first, let method = ClusterMethod(rawValue: methodName) else {
            throw bad(
                "unknown method; expected one of \(ClusterMethod.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.text = text
        self.method = method
        (space, clusters, mapping, seed, initCount) = (.gray, nil, .trainVote, 0, 10)
        (regularize, minRegion, connectivity, name) = (.none, 0, 1, nil)
        let pairs = parts.count > 1 ? parts[1].split(separator: ",").map(String.init) : []
        for pair in pairs {
            let keyValue = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard keyValue.count == 2, !keyValue[1].isEmpty else { throw bad("'\(pair)' is not key=value") }
            let (key, value) = (keyValue[0], keyValue[1])
            func integer(_ range: ClosedRange<Int>) throws -> Int {
                guard let number = Int(value), range.contains(number) else {
                    throw bad("\(key)=\(value) is not an integer in \(range.lowerBound)...\(range.upperBound)")
                }
                return number
            }
            switch key {
            case "space":
                guard let parsed = ColorSpace(rawValue: value) else { throw bad("unknown space '\(value)'") }
                space = parsed
            case "classes": clusters = try integer(2...255)
            case "map":
                guard let parsed = Mapping(rawValue: value) else {
                    throw bad("map must be one of \(Mapping.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                mapping = parsed
            case "seed": seed = try integer(Int.min...Int.max)
            case "n-init": initCount = try integer(1...1000)
            case "regularize":
                guard let parsed = try? PostProcessingPipeline(parsing: value, separator: "+") else {
                    throw bad("unknown regularizer '\(value)'")
                }
                if let step = parsed.stepNeedingProbabilities {
                    throw bad(
                        "regularizer '\(step)' works on class probabilities, which a classical method does "
                            + "not produce")
                }
                regularize = parsed
            case "min-region": minRegion = try integer(0...Int.max)
            case "connectivity": connectivity = try integer(1...2)
            case "name": name = value
            default: throw bad("unknown key '\(key)'")
            }
        }
    }

    /// The run name: `name=` if given, else method-space-mapping (with "oracle" spelled out).
    public var runName: String {
        name ?? "\(method.rawValue)-\(space.rawValue)-\(mapping == .oracle ? "hungarian-oracle" : mapping.rawValue)"
    }

    public func options(classCount: Int) -> ClusterOptions {
        ClusterOptions(
            method: method, classes: clusters ?? classCount, space: space, seed: seed, initCount: initCount,
            regularize: regularize, minRegion: minRegion, connectivity: connectivity)
    }
}
