import SliceLabSupport

/// Rules that turn class models into one class per pixel.
public enum DecisionRules {
    /// How distance to a centre is measured.
    public enum Metric: Sendable {
        case euclidean
        /// Mahalanobis distance under one covariance per class (`K × D × D`, row-major).
        case mahalanobis(covariances: [Double])
    }

    /// The nearest centre of every point (ties to the lowest class index).
    /// - Throws: `ClassicalError.shapeMismatch` for centres of another dimension or covariances of the wrong
    ///   size, `.invalidArgument` for a covariance that is not positive definite.
    public static func nearestCenter(
        _ points: FeatureMatrix, centers: FeatureMatrix,
        metric: Metric = .euclidean
    ) throws -> [Int32] {
        let (k, dimension) = (centers.count, points.dimension)
        guard centers.dimension == dimension, k > 0 else {
            throw ClassicalError.shapeMismatch(
                "centres of dimension \(centers.dimension) cannot classify points of dimension \(dimension)")
        }
        var factors: [[Double]] = []
        if case .mahalanobis(let covariances) = metric {
            guard covariances.count == k * dimension * dimension else {
                throw ClassicalError.shapeMismatch("need \(k) covariances of \(dimension)x\(dimension)")
            }
            for cluster in 0..<k {
                let block = Array(
                    covariances[(cluster * dimension * dimension)..<((cluster + 1) * dimension * dimension)])
                guard let factor = Cholesky.factor(block, dimension: dimension) else {
                    throw ClassicalError.invalidArgument("covariance of class \(cluster) is not positive definite")
                }
                factors.append(factor)
            }
        }
        var labels = [Int32](repeating: 0, count: points.count)
        labels.withUnsafeMutableBufferPointer { output in
            Parallel.forEachChunk(points.count) { _, range in
                var difference = [Double](repeating: 0, count: dimension)
                for point in range {
                    var best = 0
                    var bestDistance = Double.infinity
                    for cluster in 0..<k {
                        for channel in 0..<dimension {
                            difference[channel] =
                                points.values[point * dimension + channel]
                                - centers.values[cluster * dimension + channel]
                        }
                        let distance =
                            factors.isEmpty
                            ? difference.reduce(0) { $0 + $1 * $1 }
                            : Cholesky.solvedSquaredNorm(factors[cluster], difference, dimension: dimension)
                        if distance < bestDistance { (best, bestDistance) = (cluster, distance) }
                    }
                    output[point] = Int32(best)
                }
            }
        }
        return labels
    }

    /// The class of largest membership for every point; `memberships` is `K × n` row-major (fuzzy c-means'
    /// layout). Ties go to the lowest class index.
    public static func maximumMembership(_ memberships: [Double], classCount: Int) throws -> [Int32] {
        guard classCount > 0, memberships.count % classCount == 0 else {
            throw ClassicalError.shapeMismatch("\(memberships.count) memberships do not split into \(classCount) rows")
        }
        let n = memberships.count / classCount
        return (0..<n).map { point in
            var best = 0
            for cluster in 1..<classCount where memberships[cluster * n + point] > memberships[best * n + point] {
                best = cluster
            }
            return Int32(best)
        }
    }

    /// The component of largest posterior probability for every point under a Gaussian mixture.
    public static func maximumPosterior(_ model: MixtureModel, _ points: FeatureMatrix) throws -> [Int32] {
        let densities = try model.weightedLogDensities(points)
        let k = model.componentCount
        return (0..<points.count).map { point in
            var best = 0
            for component in 1..<max(k, 1) where densities[point * k + component] > densities[point * k + best] {
                best = component
            }
            return Int32(best)
        }
    }
}
