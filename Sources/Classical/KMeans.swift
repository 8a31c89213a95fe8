import Foundation
import SliceLabSupport

/// The outcome of partitioning points into clusters.
public struct Clustering: Sendable, Equatable {
    /// One row per cluster, in the feature space of the points.
    public var centers: FeatureMatrix
    /// The cluster of each point, 0..<K.
    public var labels: [Int32]
    /// The sum of squared Euclidean distances of the points to their assigned centres (k-means' objective).
    public var inertia: Double
    /// Iterations run by the restart that was kept.
    public var iterations: Int
    /// Whether that restart met its stopping rule before `maxIterations`.
    public var converged: Bool
}

/// k-means clustering as scikit-learn's `KMeans`: k-means++ seeding with greedy local trials, `initCount`
/// restarts keeping the lowest inertia, Lloyd or Elkan iterations, and the tolerance scaled by the mean
/// per-feature variance.
///
/// Restarts draw from `SeededGenerator.stream(seed:index:)`, so a seed reproduces a run exactly (but not
/// scikit-learn's numpy draws: agreement with scikit-learn is on inertia, not on the random path).
/// The assignment step is split across cores for large inputs.
/// Reference: Arthur & Vassilvitskii, "k-means++" (SODA 2007); Elkan, "Using the triangle inequality to
/// accelerate k-means" (ICML 2003); `sklearn.cluster.KMeans`.
public struct KMeans: Sendable {
    public enum Algorithm: String, Sendable, CaseIterable { case lloyd, elkan }

    public var clusterCount: Int
    public var initCount: Int
    public var maxIterations: Int
    /// Relative tolerance: iterations stop when the summed squared centre shift is at most
    /// `tolerance × mean(var(points, axis 0))`.
    public var tolerance: Double
    public var algorithm: Algorithm
    public var seed: Int

    public init(
        clusterCount: Int, initCount: Int = 10, maxIterations: Int = 300, tolerance: Double = 1e-4,
        algorithm: Algorithm = .lloyd, seed: Int = 0
    ) {
        (self.clusterCount, self.initCount, self.maxIterations) = (clusterCount, initCount, maxIterations)
        (self.tolerance, self.algorithm, self.seed) = (tolerance, algorithm, seed)
    }

    /// Clusters `points`.
    /// - Throws: `ClassicalError.emptyInput`, `.nonFiniteValue`, `.invalidArgument` (K < 1, initCount < 1,
    ///   maxIterations < 1), `.tooFewDistinctValues` when there are fewer distinct points than clusters.
    public func fit(_ points: FeatureMatrix) throws -> Clustering {
        try points.validate("the points")
        guard clusterCount >= 1, initCount >= 1, maxIterations >= 1 else {
            throw ClassicalError.invalidArgument(
                "k-means needs clusterCount, initCount and maxIterations of at least 1 "
                    + "(got \(clusterCount), \(initCount), \(maxIterations))")
        }
        let distinct = Self.distinctRows(points, atLeast: clusterCount)
        guard distinct >= clusterCount else {
            throw ClassicalError.tooFewDistinctValues(classes: clusterCount, distinct: distinct)
        }
        let variance = points.columnMoments().variance
        let scaledTolerance = tolerance * variance.reduce(0, +) / Double(variance.count)
        func run(_ restart: Int) -> Clustering {
            var generator = SeededGenerator.stream(seed: seed, index: restart)
            let initial = Self.plusPlusCenters(points, clusterCount: clusterCount, generator: &generator)
            return algorithm == .lloyd
                ? lloyd(points, centers: initial, tolerance: scaledTolerance)
                : elkan(points, centers: initial, tolerance: scaledTolerance)
        }
        var best = run(0)
        for restart in 1..<max(initCount, 1) {
            let result = run(restart)
            if result.inertia < best.inertia { best = result }
        }
        return best
    }

    /// Counts distinct rows, stopping once `atLeast` are found.
    static func distinctRows(_ points: FeatureMatrix, atLeast: Int) -> Int {
        var seen = Set<[Double]>()
        for index in 0..<points.count {
            seen.insert(points.row(index))
            if seen.count >= atLeast { break }
        }
        return seen.count
    }

    // MARK: - k-means++

    /// Greedy k-means++ (`sklearn.cluster._kmeans._kmeans_plusplus`): the first centre uniformly, then for
    /// each next centre `2 + ⌊ln K⌋` candidates drawn with probability ∝ D², keeping the one that lowers the
    /// potential most.
    static func plusPlusCenters(
        _ points: FeatureMatrix, clusterCount: Int,
        generator: inout SeededGenerator
    ) -> [Double] {
        let (count, dimension) = (points.count, points.dimension)
        let trials = 2 + Int(log(Double(clusterCount)))
        var centers = [Double](repeating: 0, count: clusterCount * dimension)
        let first = Int(generator.uniform() * Double(count))
        centers.replaceSubrange(0..<dimension, with: points.values[first * dimension..<(first + 1) * dimension])
        var closest = squaredDistances(points, to: points.row(first))
        var potential = closest.reduce(0, +)
        for center in 1..<clusterCount {
            var cumulative = [Double](repeating: 0, count: count)
            var running = 0.0
            for index in 0..<count {
                running += closest[index]
                cumulative[index] = running
            }
            var bestCandidate = 0
            var bestPotential = Double.infinity
            var bestDistances: [Double] = []
            for _ in 0..<trials {
                let target = generator.uniform() * potential
                var low = 0
                var high = count  // first index with cumulative >= target (searchsorted 'left')
                while low < high {
                    let middle = (low + high) / 2
                    if cumulative[middle] < target { low = middle + 1 } else { high = middle }
                }
                let candidate = min(low, count - 1)
                var distances = squaredDistances(points, to: points.row(candidate))
                for index in 0..<count where closest[index] < distances[index] { distances[index] = closest[index] }
                let candidatePotential = distances.reduce(0, +)
                if candidatePotential < bestPotential {
                    (bestCandidate, bestPotential, bestDistances) = (candidate, candidatePotential, distances)
                }
            }
            centers.replaceSubrange(
                center * dimension..<(center + 1) * dimension,
                with: points.values[bestCandidate * dimension..<(bestCandidate + 1) * dimension])
            closest = bestDistances
            potential = bestPotential
        }
        return centers
    }

    /// Squared Euclidean distance of every point to one vector, computed in parallel chunks.
    static func squaredDistances(_ points: FeatureMatrix, to vector: [Double]) -> [Double] {
        let dimension = points.dimension
        var result = [Double](repeating: 0, count: points.count)
        result.withUnsafeMutableBufferPointer { output in
            points.values.withUnsafeBufferPointer { values in
                vector.withUnsafeBufferPointer { target in
                    Parallel.forEachChunk(points.count) { _, range in
                        for index in range {
                            var sum = 0.0
                            for channel in 0..<dimension {
                                let delta = values[index * dimension + channel] - target[channel]
                                sum += delta * delta
                            }
                            output[index] = sum
                        }
                    }
                }
            }
        }
        return result
    }

    // MARK: - Lloyd

    /// One assignment pass: labels to the nearest centre, per-cluster sums and counts, and the inertia.
    static func assign(
        _ points: FeatureMatrix, centers: [Double], clusterCount: Int, labels: inout [Int32],
        distances: inout [Double]
    ) -> (sums: [Double], counts: [Int], inertia: Double) {
        let (count, dimension) = (points.count, points.dimension)
        let chunks = Parallel.chunkCount(count)
        var sums = [Double](repeating: 0, count: chunks * clusterCount * dimension)
        var counts = [Int](repeating: 0, count: chunks * clusterCount)
        var inertias = [Double](repeating: 0, count: chunks)
        labels.withUnsafeMutableBufferPointer { labelBuffer in
            distances.withUnsafeMutableBufferPointer { distanceBuffer in
                sums.withUnsafeMutableBufferPointer { sumBuffer in
                    counts.withUnsafeMutableBufferPointer { countBuffer in
                        inertias.withUnsafeMutableBufferPointer { inertiaBuffer in
                            points.values.withUnsafeBufferPointer { values in
                                centers.withUnsafeBufferPointer { centerBuffer in
                                    Parallel.forEachChunk(count) { chunk, range in
                                        let sumBase = chunk * clusterCount * dimension
                                        var inertia = 0.0
                                        for index in range {
                                            let point = index * dimension
                                            var best = 0
                                            var bestDistance = Double.infinity
                                            for cluster in 0..<clusterCount {
                                                var sum = 0.0
                                                let center = cluster * dimension
                                                for channel in 0..<dimension {
                                                    let delta = values[point + channel] - centerBuffer[center + channel]
                                                    sum += delta * delta
                                                }
                                                if sum < bestDistance { (best, bestDistance) = (cluster, sum) }
                                            }
                                            labelBuffer[index] = Int32(best)
                                            distanceBuffer[index] = bestDistance
                                            inertia += bestDistance
                                            countBuffer[chunk * clusterCount + best] += 1
                                            for channel in 0..<dimension {
                                                sumBuffer[sumBase + best * dimension + channel] +=
                                                    values[point + channel]
                                            }
                                        }
                                        inertiaBuffer[chunk] = inertia
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        var totalSums = [Double](repeating: 0, count: clusterCount * dimension)
        var totalCounts = [Int](repeating: 0, count: clusterCount)
        for chunk in 0..<chunks {
            for position in 0..<(clusterCount * dimension) {
                totalSums[position] += sums[chunk * clusterCount * dimension + position]
            }
            for cluster in 0..<clusterCount { totalCounts[cluster] += counts[chunk * clusterCount + cluster] }
        }
        return (totalSums, totalCounts, inertias.reduce(0, +))
    }

    /// New centres as the means of their points; an empty cluster takes the point farthest from its centre
    /// (scikit-learn's `_relocate_empty_clusters`), each relocated cluster a different point.
    static func updatedCenters(
        _ points: FeatureMatrix, sums: [Double], counts: [Int], old: [Double],
        distances: [Double]
    ) -> [Double] {
        let dimension = points.dimension
        var centers = old
        var taken = Set<Int>()
        for cluster in 0..<counts.count {
            if counts[cluster] > 0 {
                for channel in 0..<dimension {
                    centers[cluster * dimension + channel] =
                        sums[cluster * dimension + channel] / Double(counts[cluster])
                }
            } else {
                var far = -1
                var farDistance = -1.0
                for index in 0..<points.count where distances[index] > farDistance && !taken.contains(index) {
                    (far, farDistance) = (index, distances[index])
                }
                if far >= 0 {
                    taken.insert(far)
                    centers.replaceSubrange(
                        cluster * dimension..<(cluster + 1) * dimension,
                        with: points.values[far * dimension..<(far + 1) * dimension])
                }
            }
        }
        return centers
    }

    static func squaredShift(_ a: [Double], _ b: [Double]) -> Double {
        zip(a, b).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }
    }

    func lloyd(_ points: FeatureMatrix, centers initial: [Double], tolerance: Double) -> Clustering {
        var centers = initial
        var labels = [Int32](repeating: -1, count: points.count)
        var previous = labels
        var distances = [Double](repeating: 0, count: points.count)
        var iterations = 0
        var strict = false
        var converged = false
        while iterations < maxIterations {
            let (sums, counts, _) = Self.assign(
                points, centers: centers, clusterCount: clusterCount,
                labels: &labels, distances: &distances)
            let updated = Self.updatedCenters(points, sums: sums, counts: counts, old: centers, distances: distances)
            let shift = Self.squaredShift(updated, centers)
            centers = updated
            iterations += 1
            if labels == previous {
                (strict, converged) = (true, true)
                break
            }
            if shift <= tolerance {
                converged = true
                break
            }
            previous = labels
        }
        return finish(
            points, centers: centers, labels: labels, strict: strict, iterations: iterations,
            converged: converged)
    }

    /// The final E-step (unless labels were already stable) so labels and inertia match the returned centres.
    func finish(
        _ points: FeatureMatrix, centers: [Double], labels: [Int32], strict: Bool, iterations: Int,
        converged: Bool
    ) -> Clustering {
        var labels = labels
        var distances = [Double](repeating: 0, count: points.count)
        let (_, _, inertia) = Self.assign(
            points, centers: centers, clusterCount: clusterCount, labels: &labels,
            distances: &distances)
        return Clustering(
            centers: FeatureMatrix(count: clusterCount, dimension: points.dimension, values: centers),
            labels: labels, inertia: inertia, iterations: iterations, converged: converged || strict)
    }

    // MARK: - Elkan

    func elkan(_ points: FeatureMatrix, centers initial: [Double], tolerance: Double) -> Clustering {
        let (count, dimension, k) = (points.count, points.dimension, clusterCount)
        var centers = initial
        var labels = [Int32](repeating: 0, count: count)
        var upper = [Double](repeating: 0, count: count)
        var lower = [Double](repeating: 0, count: count * k)
        // Exact first assignment, filling the bounds.
        points.values.withUnsafeBufferPointer { values in
            for index in 0..<count {
                var best = 0
                var bestDistance = Double.infinity
                for cluster in 0..<k {
                    var sum = 0.0
                    for channel in 0..<dimension {
                        let delta = values[index * dimension + channel] - centers[cluster * dimension + channel]
                        sum += delta * delta
                    }
                    let distance = sum.squareRoot()
                    lower[index * k + cluster] = distance
                    if distance < bestDistance { (best, bestDistance) = (cluster, distance) }
                }
                labels[index] = Int32(best)
                upper[index] = bestDistance
            }
        }
        var previous = [Int32](repeating: -1, count: count)
        var iterations = 0
        var strict = false
        var converged = false
        while iterations < maxIterations {
            // Centre-to-centre distances and half the distance to each centre's nearest other centre.
            var between = [Double](repeating: 0, count: k * k)
            var half = [Double](repeating: .infinity, count: k)
            for a in 0..<k {
                for b in 0..<k where b != a {
                    var sum = 0.0
                    for channel in 0..<dimension {
                        let delta = centers[a * dimension + channel] - centers[b * dimension + channel]
                        sum += delta * delta
                    }
                    between[a * k + b] = sum.squareRoot()
                    half[a] = min(half[a], 0.5 * between[a * k + b])
                }
            }
            if iterations > 0 {
                Self.elkanAssign(
                    points, centers: centers, k: k, between: between, half: half,
                    labels: &labels, upper: &upper, lower: &lower)
            }
            // Means.
            var sums = [Double](repeating: 0, count: k * dimension)
            var counts = [Int](repeating: 0, count: k)
            var distances = [Double](repeating: 0, count: count)
            for index in 0..<count {
                let cluster = Int(labels[index])
                counts[cluster] += 1
                for channel in 0..<dimension {
                    sums[cluster * dimension + channel] += points.values[index * dimension + channel]
                }
                distances[index] = upper[index] * upper[index]
            }
            let updated = Self.updatedCenters(points, sums: sums, counts: counts, old: centers, distances: distances)
            var moved = [Double](repeating: 0, count: k)
            for cluster in 0..<k {
                var sum = 0.0
                for channel in 0..<dimension {
                    let delta = updated[cluster * dimension + channel] - centers[cluster * dimension + channel]
                    sum += delta * delta
                }
                moved[cluster] = sum.squareRoot()
            }
            for index in 0..<count {
                for cluster in 0..<k {
                    lower[index * k + cluster] = max(lower[index * k + cluster] - moved[cluster], 0)
                }
                upper[index] += moved[Int(labels[index])]
            }
            let shift = moved.reduce(0) { $0 + $1 * $1 }
            centers = updated
            iterations += 1
            if labels == previous {
                (strict, converged) = (true, true)
                break
            }
            if shift <= tolerance {
                converged = true
                break
            }
            previous = labels
        }
        return finish(
            points, centers: centers, labels: labels, strict: strict, iterations: iterations,
            converged: converged)
    }

    /// Elkan's assignment with triangle-inequality pruning, split across cores.
    static func elkanAssign(
        _ points: FeatureMatrix, centers: [Double], k: Int, between: [Double], half: [Double],
        labels: inout [Int32], upper: inout [Double], lower: inout [Double]
    ) {
        let dimension = points.dimension
        labels.withUnsafeMutableBufferPointer { labelBuffer in
            upper.withUnsafeMutableBufferPointer { upperBuffer in
                lower.withUnsafeMutableBufferPointer { lowerBuffer in
                    points.values.withUnsafeBufferPointer { values in
                        Parallel.forEachChunk(points.count) { _, range in
                            func distance(_ index: Int, _ cluster: Int) -> Double {
                                var sum = 0.0
                                for channel in 0..<dimension {
                                    let delta =
                                        values[index * dimension + channel] - centers[cluster * dimension + channel]
                                    sum += delta * delta
                                }
                                return sum.squareRoot()
                            }
                            for index in range {
                                var label = Int(labelBuffer[index])
                                var bound = upperBuffer[index]
                                if bound <= half[label] { continue }
                                var tight = false
                                for cluster in 0..<k where cluster != label {
                                    let threshold = max(
                                        lowerBuffer[index * k + cluster], 0.5 * between[label * k + cluster])
                                    if bound <= threshold { continue }
                                    if !tight {
                                        bound = distance(index, label)
                                        lowerBuffer[index * k + label] = bound
                                        tight = true
                                        if bound <= threshold { continue }
                                    }
                                    let candidate = distance(index, cluster)
                                    lowerBuffer[index * k + cluster] = candidate
                                    if candidate < bound { (label, bound) = (cluster, candidate) }
                                }
                                labelBuffer[index] = Int32(label)
                                upperBuffer[index] = bound
                            }
                        }
                    }
                }
            }
        }
    }
}
