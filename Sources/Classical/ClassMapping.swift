/// A mapping from cluster indices to semantic classes, with how it was obtained.
public struct ClassMapping: Sendable, Equatable {
    public enum Method: String, Sendable {
        /// Clusters ranked by mean intensity (or L*): cluster of rank r → class r.
        case intensityOrder = "intensity-order"
        /// Each cluster → the ground-truth class it most often covers on a training split.
        case majorityVote = "majority-vote"
        /// The one-to-one assignment maximising overlap with the evaluated case's own ground truth. An
        /// oracle: it looks at the answer, so it bounds what any mapping could reach and is never a result.
        case hungarianOracle = "hungarian-oracle"
    }

    public let method: Method
    /// `classOf[cluster]` is the semantic class of that cluster.
    public let classOf: [Int32]

    /// Whether this mapping used the evaluated case's ground truth (outputs must say so).
    public var isOracle: Bool { method == .hungarianOracle }

    /// Applies the mapping to a cluster label map.
    /// - Throws: `ClassicalError.invalidArgument` for a cluster index the mapping does not cover.
    public func apply(_ clusters: [Int32]) throws -> [Int32] {
        try clusters.map { cluster in
            guard cluster >= 0, Int(cluster) < classOf.count else {
                throw ClassicalError.invalidArgument(
                    "cluster \(cluster) is not covered by a mapping of \(classOf.count)")
            }
            return classOf[Int(cluster)]
        }
    }

    /// Ranks clusters by the mean of `intensity` over their pixels, darkest first. Clusters with no pixel
    /// keep their relative order after all occupied ones.
    /// - Throws: `ClassicalError.shapeMismatch` when the arrays differ in length.
    public static func intensityOrder(clusters: [Int32], intensity: [Double], clusterCount: Int) throws -> ClassMapping
    {
        guard clusters.count == intensity.count else {
            throw ClassicalError.shapeMismatch("\(clusters.count) labels but \(intensity.count) intensities")
        }
        var sums = [Double](repeating: 0, count: clusterCount)
        var counts = [Int](repeating: 0, count: clusterCount)
        for (cluster, value) in zip(clusters, intensity) where cluster >= 0 && Int(cluster) < clusterCount {
            sums[Int(cluster)] += value
            counts[Int(cluster)] += 1
        }
        let ranked = (0..<clusterCount).sorted { a, b in
            switch (counts[a] > 0, counts[b] > 0) {
            case (true, true): return (sums[a] / Double(counts[a]), a) < (sums[b] / Double(counts[b]), b)
            case (true, false): return true
            case (false, true): return false
            case (false, false): return a < b
            }
        }
        var classOf = [Int32](repeating: 0, count: clusterCount)
        for (rank, cluster) in ranked.enumerated() { classOf[cluster] = Int32(rank) }
        return ClassMapping(method: .intensityOrder, classOf: classOf)
    }

    /// Learns cluster → class by majority vote on a training split: each cluster takes the ground-truth class
    /// it overlaps most (ties to the lower class); a cluster absent from the training split maps to
    /// `unseenClass`.
    public static func majorityVote(
        clusters: [Int32], truth: [Int32], clusterCount: Int, classCount: Int,
        unseenClass: Int32 = 0
    ) throws -> ClassMapping {
        let overlap = try contingency(
            clusters: clusters, truth: truth, clusterCount: clusterCount,
            classCount: classCount)
        let classOf = (0..<clusterCount).map { cluster -> Int32 in
            let row = overlap[cluster]
            guard let top = row.max(), top > 0, let best = row.firstIndex(of: top) else { return unseenClass }
            return Int32(best)
        }
        return ClassMapping(method: .majorityVote, classOf: classOf)
    }

    /// The Hungarian (Kuhn–Munkres) one-to-one matching of clusters to classes maximising total overlap on
    /// the evaluated case itself — the oracle. With more clusters than classes the unmatched clusters map to
    /// the class they overlap most.
    public static func hungarianOracle(
        clusters: [Int32], truth: [Int32], clusterCount: Int,
        classCount: Int
    ) throws -> ClassMapping {
        let overlap = try contingency(
            clusters: clusters, truth: truth, clusterCount: clusterCount,
            classCount: classCount)
        let size = max(clusterCount, classCount)
        let largest = overlap.flatMap { $0 }.max() ?? 0
        var cost = [[Double]](repeating: [Double](repeating: Double(largest), count: size), count: size)
        for cluster in 0..<clusterCount {
            for label in 0..<classCount { cost[cluster][label] = Double(largest - overlap[cluster][label]) }
        }
        let assignment = Hungarian.minimumCostAssignment(cost)
        let classOf = (0..<clusterCount).map { cluster -> Int32 in
            let matched = assignment[cluster]
            if matched < classCount { return Int32(matched) }
            let row = overlap[cluster]
            return Int32(row.firstIndex(of: row.max() ?? 0) ?? 0)
        }
        return ClassMapping(method: .hungarianOracle, classOf: classOf)
    }

    /// Pixel counts per (cluster, class).
    static func contingency(clusters: [Int32], truth: [Int32], clusterCount: Int, classCount: Int) throws -> [[Int]] {
        guard clusters.count == truth.count else {
            throw ClassicalError.shapeMismatch(
                "\(clusters.count) cluster labels but \(truth.count) ground-truth labels")
        }
        guard !clusters.isEmpty else { throw ClassicalError.emptyInput("the training split") }
        var table = [[Int]](repeating: [Int](repeating: 0, count: classCount), count: clusterCount)
        for (cluster, label) in zip(clusters, truth) {
            guard cluster >= 0, Int(cluster) < clusterCount, label >= 0, Int(label) < classCount else {
                throw ClassicalError.invalidArgument(
                    "cluster \(cluster) or class \(label) outside 0..<\(clusterCount) / 0..<\(classCount)")
            }
            table[Int(cluster)][Int(label)] += 1
        }
        return table
    }
}

/// The Hungarian algorithm for assignment problems (potentials and augmenting paths; O(n² m) for n rows ≤ m
/// columns).
public enum Hungarian {
    /// `result[row]` is the column assigned to `row` minimising the total cost, for at most as many rows as columns
    /// (each row gets a distinct column).
    public static func minimumCostAssignment(_ cost: [[Double]]) -> [Int] {
        let n = cost.count
        guard n > 0 else { return [] }
        let m = cost[0].count
        precondition(n <= m && cost.allSatisfy { $0.count == m }, "an assignment needs rows ≤ columns")
        var rowPotential = [Double](repeating: 0, count: n + 1)
        var columnPotential = [Double](repeating: 0, count: m + 1)
        var matchOfColumn = [Int](repeating: 0, count: m + 1)  // 1-based rows, 0 = free
        var way = [Int](repeating: 0, count: m + 1)
        for row in 1...n {
            matchOfColumn[0] = row
            var column0 = 0
            var minimum = [Double](repeating: .infinity, count: m + 1)
            var used = [Bool](repeating: false, count: m + 1)
            repeat {
                used[column0] = true
                let row0 = matchOfColumn[column0]
                var delta = Double.infinity
                var column1 = 0
                for column in 1...m where !used[column] {
                    let reduced = cost[row0 - 1][column - 1] - rowPotential[row0] - columnPotential[column]
                    if reduced < minimum[column] { (minimum[column], way[column]) = (reduced, column0) }
                    if minimum[column] < delta { (delta, column1) = (minimum[column], column) }
                }
                for column in 0...m {
                    if used[column] {
                        rowPotential[matchOfColumn[column]] += delta
                        columnPotential[column] -= delta
                    } else {
                        minimum[column] -= delta
                    }
                }
                column0 = column1
            } while matchOfColumn[column0] != 0
            repeat {
                let previous = way[column0]
                matchOfColumn[column0] = matchOfColumn[previous]
                column0 = previous
            } while column0 != 0
        }
        var result = [Int](repeating: 0, count: n)
        for column in 1...m where matchOfColumn[column] > 0 { result[matchOfColumn[column] - 1] = column - 1 }
        return result
    }

    /// The (row, column) pairs of a least-cost assignment of min(rows, columns) rows to distinct columns, by row.
    public static func minimumCostPairs(_ cost: [[Double]]) -> [(row: Int, column: Int)] {
        guard let columns = cost.first?.count, columns > 0 else { return [] }
        guard cost.count > columns else { return minimumCostAssignment(cost).enumerated().map { ($0, $1) } }
        let transposed = (0..<columns).map { j in cost.map { $0[j] } }
        return minimumCostAssignment(transposed).enumerated().map { ($1, $0) }.sorted { $0.row < $1.row }
    }
}
