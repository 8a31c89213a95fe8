import Classical
import SliceLabSupport

/// The lesions of one class in a reference and a prediction, and how they match.
///
/// A lesion is a connected component of the class (full connectivity: 8 neighbours in 2-D, 26 in 3-D, as `cc3d`
/// and BraTS count them). Reference and predicted lesions are matched one to one so that the total Dice of the
/// matched pairs is largest, among pairs that overlap (Dice ≥ 10⁻⁶): panoptica's `MaxBipartiteMatching` on Dice,
/// which is how `brats-evaluation` configures it. A matched pair is a true positive; an unmatched reference lesion a
/// false negative, an unmatched predicted one a false positive.
public struct LesionMatching: Sendable {
    /// One matched pair: the reference and predicted lesion (numbered from 1 in raster order of their first voxel)
    /// and their Dice, IoU and HD95 (mm, under the evaluation's HD95 definition).
    public struct Pair: Sendable, Equatable {
        public let reference: Int
        public let prediction: Int
        public let dice: Double
        public let iou: Double
        public let hd95: Double
    }

    public let referenceLesions: Int
    public let predictedLesions: Int
    public let pairs: [Pair]

    public var truePositives: Int { pairs.count }
    public var falseNegatives: Int { referenceLesions - pairs.count }
    public var falsePositives: Int { predictedLesions - pairs.count }

    /// The HD95 an unmatched lesion scores (mm), BraTS 2023's penalty (the diagonal of its 240 × 240 × 155 grid).
    public static let unmatchedHD95 = 374.0

    /// Finds and matches the lesions of `classIndex`.
    ///
    /// - Throws: `MetricsError.shapeMismatch` when the maps differ in shape.
    public init(
        reference: LabelGrid<UInt16>, prediction: LabelGrid<UInt16>, classIndex: Int, hd95: HD95Definition
    ) throws {
        guard reference.shape == prediction.shape else {
            throw MetricsError.shapeMismatch(
                reference: reference.shape.dimensions, prediction: prediction.shape.dimensions)
        }
        let referenceRegions = try Self.lesions(reference, classIndex)
        let predictedRegions = try Self.lesions(prediction, classIndex)
        (referenceLesions, predictedLesions) = (referenceRegions.count, predictedRegions.count)
        let overlaps = Self.overlaps(referenceRegions, predictedRegions)
        var pairs: [Pair] = []
        for (r, p) in Self.bestPairs(overlaps) {
            let overlap = Double(overlaps.shared[Pair.Key(r, p)] ?? 0)
            let sizes = Double(overlaps.referenceSizes[r] + overlaps.predictedSizes[p])
            let distances = try SurfaceDistances(
                prediction: predictedRegions.regions.labels.map { $0 == Int32(p) },
                reference: referenceRegions.regions.labels.map { $0 == Int32(r) },
                shape: reference.shape.dimensions, spacing: reference.spacing)
            pairs.append(
                Pair(
                    reference: r, prediction: p, dice: 2 * overlap / sizes, iou: overlap / (sizes - overlap),
                    hd95: distances.hausdorff95(hd95)))
        }
        self.pairs = pairs.sorted { $0.reference < $1.reference }
    }

    // MARK: - Lesion-wise metrics

    /// The lesions counted by lesion-wise scores: every reference lesion and every false positive.
    private var scored: Int { truePositives + falseNegatives + falsePositives }

    /// BraTS's lesion-wise Dice: the matched pairs' Dice summed, unmatched lesions (either side) scoring 0, over the
    /// number of reference lesions plus false positives. `empty` when there is no lesion on either side.
    public func lesionDice(empty: Double) -> Double {
        scored == 0 ? empty : pairs.map(\.dice).reduce(0, +) / Double(scored)
    }

    /// BraTS's lesion-wise HD95: as `lesionDice`, with unmatched lesions scoring `unmatchedHD95`.
    public func lesionHD95(empty: Double) -> Double {
        guard scored != 0 else { return empty }
        let unmatched = Double(falseNegatives + falsePositives) * Self.unmatchedHD95
        return (pairs.map(\.hd95).reduce(0, +) + unmatched) / Double(scored)
    }

    /// Detection sensitivity, TP / (TP + FN); NaN without reference lesions.
    public var sensitivity: Double { Self.ratio(truePositives, truePositives + falseNegatives) }

    /// Detection precision, TP / (TP + FP); NaN without predicted lesions.
    public var precision: Double { Self.ratio(truePositives, truePositives + falsePositives) }

    /// Detection F1 (panoptic recognition quality), TP / (TP + (FP + FN) / 2); `empty` without lesions.
    public func f1(empty: Double) -> Double {
        scored == 0 ? empty : Double(truePositives) / (Double(truePositives) + Double(scored - truePositives) / 2)
    }

    /// Panoptic quality: the matched pairs' mean IoU times `f1`, that is Σ IoU / (TP + (FP + FN) / 2), under this
    /// matching (panoptica's `pq`); `empty` without lesions.
    public func panopticQuality(empty: Double) -> Double {
        guard scored != 0 else { return empty }
        return pairs.map(\.iou).reduce(0, +) / (Double(truePositives) + Double(scored - truePositives) / 2)
    }

    private static func ratio(_ part: Int, _ whole: Int) -> Double {
        whole == 0 ? .nan : Double(part) / Double(whole)
    }

    // MARK: - Finding and matching

    private static func lesions(
        _ map: LabelGrid<UInt16>, _ classIndex: Int
    ) throws -> (regions: LabelGrid<Int32>, count: Int) {
        let mask = LabelGrid(
            shape: map.shape, spacing: map.spacing, labels: map.labels.map { Int($0) == classIndex ? Int32(1) : 0 })
        return try ConnectedComponents.label(mask, connectivity: map.shape.isVolume ? 3 : 2, background: 0)
    }

    private struct Overlaps {
        /// Voxels shared by reference lesion r and predicted lesion p.
        var shared: [Pair.Key: Int] = [:]
        /// Voxels of each lesion, index 0 unused.
        var referenceSizes: [Int]
        var predictedSizes: [Int]
    }

    private static func overlaps(
        _ reference: (regions: LabelGrid<Int32>, count: Int), _ prediction: (regions: LabelGrid<Int32>, count: Int)
    ) -> Overlaps {
        var result = Overlaps(
            referenceSizes: [Int](repeating: 0, count: reference.count + 1),
            predictedSizes: [Int](repeating: 0, count: prediction.count + 1))
        for (r, p) in zip(reference.regions.labels, prediction.regions.labels) {
            result.referenceSizes[Int(r)] += 1
            result.predictedSizes[Int(p)] += 1
            if r > 0, p > 0 { result.shared[Pair.Key(Int(r), Int(p)), default: 0] += 1 }
        }
        return result
    }

    /// The pairs of the assignment that maximises the matched pairs' total Dice, each pair overlapping.
    ///
    /// Lesions that overlap form small groups (the connected parts of the overlap graph); each group is solved
    /// exactly by the Hungarian method on the cost 1 − Dice (1 + 10⁻⁶ for a pair that does not overlap), as
    /// `scipy.optimize.linear_sum_assignment` is given it by panoptica, and the pairs that do overlap are kept.
    private static func bestPairs(_ overlaps: Overlaps) -> [(Int, Int)] {
        let noMatch = 1 + 1e-6
        var result: [(Int, Int)] = []
        for group in groups(Array(overlaps.shared.keys)) {
            let cost = group.references.map { r in
                group.predictions.map { p -> Double in
                    guard let shared = overlaps.shared[Pair.Key(r, p)] else { return noMatch }
                    let dice = 2 * Double(shared) / Double(overlaps.referenceSizes[r] + overlaps.predictedSizes[p])
                    return dice >= 1e-6 ? 1 - dice : noMatch
                }
            }
            for (i, j) in Hungarian.minimumCostPairs(cost) where cost[i][j] < 1 {
                result.append((group.references[i], group.predictions[j]))
            }
        }
        return result
    }

    /// The connected parts of the bipartite graph whose edges are `edges`, each with its lesions ascending.
    private static func groups(_ edges: [Pair.Key]) -> [(references: [Int], predictions: [Int])] {
        var adjacency: [Int: [Int]] = [:]  // reference r as r, predicted p as −p
        for edge in edges {
            adjacency[edge.reference, default: []].append(-edge.prediction)
            adjacency[-edge.prediction, default: []].append(edge.reference)
        }
        var seen = Set<Int>()
        var groups: [(references: [Int], predictions: [Int])] = []
        for start in adjacency.keys.sorted() where !seen.contains(start) {
            var stack = [start]
            var members: [Int] = []
            seen.insert(start)
            while let node = stack.popLast() {
                members.append(node)
                for next in adjacency[node] ?? [] where seen.insert(next).inserted { stack.append(next) }
            }
            groups.append(
                (members.filter { $0 > 0 }.sorted(), members.filter { $0 < 0 }.map { -$0 }.sorted()))
        }
        return groups
    }
}

extension LesionMatching.Pair {
    struct Key: Hashable {
        let reference: Int
        let prediction: Int
        init(_ reference: Int, _ prediction: Int) { (self.reference, self.prediction) = (reference, prediction) }
    }
}
