import Foundation
import SliceLabSupport

/// The outcome of fuzzy c-means: centres and a membership of every point in every cluster.
public struct FuzzyClustering: Sendable, Equatable {
    public var centers: FeatureMatrix
    /// Memberships, `clusterCount × pointCount` row-major (scikit-fuzzy's `u` layout); each column sums to 1.
    public var memberships: [Double]
    /// The objective J_m of the last iteration (Σ u^m d², with the memberships it started from).
    public var objective: Double
    public var iterations: Int
    /// Fuzzy partition coefficient: Σ u² / n (1 for a hard partition, 1/c for the most fuzzy one).
    public var partitionCoefficient: Double
}

/// Fuzzy c-means as `skfuzzy.cluster.cmeans` (Bezdek 1981), step for step: memberships normalised and
/// floored at machine epsilon, centres from u^m, Euclidean distances floored at epsilon, new memberships
/// from d^(−2/(m−1)) normalised per point, stopping when ‖u − u_prev‖_F < `tolerance` or after
/// `maxIterations − 1` updates.
public struct FuzzyCMeans: Sendable {
    public var clusterCount: Int
    /// The fuzzifier m > 1 (2 is the usual choice; m → 1 approaches k-means).
    public var fuzzifier: Double
    public var tolerance: Double
    public var maxIterations: Int
    /// Seed of the random initial memberships when none are given.
    public var seed: Int

    public init(
        clusterCount: Int, fuzzifier: Double = 2, tolerance: Double = 1e-5, maxIterations: Int = 300,
        seed: Int = 0
    ) {
        (self.clusterCount, self.fuzzifier, self.tolerance) = (clusterCount, fuzzifier, tolerance)
        (self.maxIterations, self.seed) = (maxIterations, seed)
    }

    /// Clusters `points`, starting from `initialMemberships` (c × n) or from seeded random memberships.
    /// - Throws: `ClassicalError.emptyInput`, `.nonFiniteValue`, `.invalidArgument` (m ≤ 1, c < 1, wrong
    ///   initial size), `.tooFewDistinctValues` when there are fewer distinct points than clusters.
    public func fit(_ points: FeatureMatrix, initialMemberships: [Double]? = nil) throws -> FuzzyClustering {
        try points.validate("the points")
        guard clusterCount >= 1, fuzzifier > 1, maxIterations >= 2 else {
            throw ClassicalError.invalidArgument(
                "fuzzy c-means needs c ≥ 1, m > 1 and maxIterations ≥ 2 (got \(clusterCount), \(fuzzifier), "
                    + "\(maxIterations))")
        }
        let distinct = KMeans.distinctRows(points, atLeast: clusterCount)
        guard distinct >= clusterCount else {
            throw ClassicalError.tooFewDistinctValues(classes: clusterCount, distinct: distinct)
        }
        let (c, n, dimension) = (clusterCount, points.count, points.dimension)
        var memberships: [Double]
        if let initialMemberships {
            guard initialMemberships.count == c * n, initialMemberships.allSatisfy({ $0.isFinite && $0 >= 0 }) else {
                throw ClassicalError.invalidArgument(
                    "initial memberships must be \(c)x\(n) finite non-negative values")
            }
            memberships = initialMemberships
        } else {
            var generator = SeededGenerator.stream(seed: seed, index: 0)
            memberships = (0..<(c * n)).map { _ in generator.uniform() }
            Self.normalizeColumns(&memberships, rows: c, columns: n)
        }
        let epsilon = Double.ulpOfOne
        for index in memberships.indices { memberships[index] = max(memberships[index], epsilon) }
        var centers = [Double](repeating: 0, count: c * dimension)
        var objective = 0.0
        var iterations = 0
        while iterations < maxIterations - 1 {
            let previous = memberships
            objective = step(points, memberships: &memberships, centers: &centers)
            iterations += 1
            var change = 0.0
            for index in memberships.indices {
                let delta = memberships[index] - previous[index]
                change += delta * delta
            }
            if change.squareRoot() < tolerance { break }
        }
        let coefficient = memberships.reduce(0) { $0 + $1 * $1 } / Double(n)
        return FuzzyClustering(
            centers: FeatureMatrix(count: c, dimension: dimension, values: centers),
            memberships: memberships, objective: objective, iterations: iterations,
            partitionCoefficient: coefficient)
    }

    static func normalizeColumns(_ matrix: inout [Double], rows: Int, columns: Int) {
        for column in 0..<columns {
            var sum = 0.0
            for row in 0..<rows { sum += matrix[row * columns + column] }
            for row in 0..<rows { matrix[row * columns + column] /= sum }
        }
    }

    /// skfuzzy's `_cmeans0`: returns J_m and replaces memberships and centres.
    func step(_ points: FeatureMatrix, memberships: inout [Double], centers: inout [Double]) -> Double {
        let (c, n, dimension) = (clusterCount, points.count, points.dimension)
        let epsilon = Double.ulpOfOne
        let m = fuzzifier
        Self.normalizeColumns(&memberships, rows: c, columns: n)
        var powered = memberships
        for index in powered.indices {
            memberships[index] = max(memberships[index], epsilon)
            powered[index] = m == 2 ? memberships[index] * memberships[index] : pow(memberships[index], m)
        }
        // Centres: Σ_j u_ij^m x_j / Σ_j u_ij^m.
        for cluster in 0..<c {
            var weight = 0.0
            var sum = [Double](repeating: 0, count: dimension)
            for point in 0..<n {
                let u = powered[cluster * n + point]
                weight += u
                for channel in 0..<dimension { sum[channel] += u * points.values[point * dimension + channel] }
            }
            for channel in 0..<dimension { centers[cluster * dimension + channel] = sum[channel] / weight }
        }
        let exponent = -2 / (m - 1)
        var objectives = [Double](repeating: 0, count: Parallel.chunkCount(n, minimumChunk: 2048))
        memberships.withUnsafeMutableBufferPointer { output in
            objectives.withUnsafeMutableBufferPointer { objectiveBuffer in
                points.values.withUnsafeBufferPointer { values in
                    centers.withUnsafeBufferPointer { centerBuffer in
                        Parallel.forEachChunk(n, minimumChunk: 2048) { chunk, range in
                            var distances = [Double](repeating: 0, count: c)
                            var scaled = distances
                            var objective = 0.0
                            for point in range {
                                for cluster in 0..<c {
                                    var sum = 0.0
                                    for channel in 0..<dimension {
                                        let delta =
                                            values[point * dimension + channel]
                                            - centerBuffer[cluster * dimension + channel]
                                        sum += delta * delta
                                    }
                                    distances[cluster] = max(sum.squareRoot(), epsilon)
                                    objective += powered[cluster * n + point] * distances[cluster] * distances[cluster]
                                }
                                // normalize_power_columns: scale to [eps, 1], then by the minimum, power, normalise.
                                let largest = distances.max() ?? 1
                                var smallest = Double.infinity
                                for cluster in 0..<c {
                                    scaled[cluster] = max(distances[cluster] / largest, epsilon)
                                    smallest = min(smallest, scaled[cluster])
                                }
                                var total = 0.0
                                for cluster in 0..<c {
                                    let ratio = scaled[cluster] / smallest
                                    scaled[cluster] = exponent == -2 ? 1 / (ratio * ratio) : pow(ratio, exponent)
                                    total += scaled[cluster]
                                }
                                for cluster in 0..<c { output[cluster * n + point] = scaled[cluster] / total }
                            }
                            objectiveBuffer[chunk] = objective
                        }
                    }
                }
            }
        }
        return objectives.reduce(0, +)
    }
}
