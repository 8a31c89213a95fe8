import Foundation
import SliceLabSupport

/// A fitted Gaussian mixture: weights, means and covariances of `componentCount` components.
public struct MixtureModel: Sendable, Equatable {
    public enum Covariance: String, Sendable, CaseIterable {
        /// A full D×D covariance per component.
        case full
        /// A diagonal covariance (per-feature variances) per component.
        case diagonal = "diag"
    }

    public let covariance: Covariance
    public var weights: [Double]
    /// K × D.
    public var means: FeatureMatrix
    /// K × D × D (full, the diagonal case expanded), row-major.
    public var covariances: [Double]
    /// The mean log-likelihood per point at the last iteration (scikit-learn's `lower_bound_`).
    public var meanLogLikelihood: Double
    public var iterations: Int
    public var converged: Bool

    public var componentCount: Int { weights.count }

    /// log(w_k) + log N(x | μ_k, Σ_k) for every point and component, `n × K` row-major.
    /// - Throws: `ClassicalError.invalidArgument` when a covariance is not positive definite.
    public func weightedLogDensities(_ points: FeatureMatrix) throws -> [Double] {
        let (k, dimension, n) = (componentCount, means.dimension, points.count)
        var factors: [[Double]] = []
        var logDeterminants: [Double] = []
        for component in 0..<k {
            let block = Array(
                covariances[(component * dimension * dimension)..<((component + 1) * dimension * dimension)])
            guard let factor = Cholesky.factor(block, dimension: dimension) else {
                throw ClassicalError.invalidArgument(
                    "component \(component) has a covariance that is not positive definite; "
                        + "use fewer components or a larger regularisation")
            }
            factors.append(factor)
            logDeterminants.append(2 * (0..<dimension).reduce(0) { $0 + log(factor[$1 * dimension + $1]) })
        }
        let constant = Double(dimension) * log(2 * Double.pi)
        var result = [Double](repeating: 0, count: n * k)
        result.withUnsafeMutableBufferPointer { output in
            Parallel.forEachChunk(n, minimumChunk: 2048) { _, range in
                var difference = [Double](repeating: 0, count: dimension)
                for point in range {
                    for component in 0..<k {
                        for channel in 0..<dimension {
                            difference[channel] =
                                points.values[point * dimension + channel]
                                - means.values[component * dimension + channel]
                        }
                        let squared = Cholesky.solvedSquaredNorm(factors[component], difference, dimension: dimension)
                        output[point * k + component] =
                            log(weights[component])
                            - 0.5 * (constant + logDeterminants[component] + squared)
                    }
                }
            }
        }
        return result
    }

    static func logSumExp(_ values: ArraySlice<Double>) -> Double {
        let top = values.max() ?? 0
        guard top.isFinite else { return top }
        return top + log(values.reduce(0) { $0 + exp($1 - top) })
    }
}

/// Gaussian mixture fitted by expectation-maximisation as scikit-learn's `GaussianMixture`: responsibilities
/// initialised from one k-means run, `reg_covar` added to the covariance diagonal, stopping when the mean
/// log-likelihood changes by less than `tolerance`, the best of `initCount` restarts kept.
public struct GaussianMixture: Sendable {
    public var componentCount: Int
    public var covariance: MixtureModel.Covariance
    public var initCount: Int
    public var maxIterations: Int
    public var tolerance: Double
    public var regularization: Double
    public var seed: Int

    public init(
        componentCount: Int, covariance: MixtureModel.Covariance = .full, initCount: Int = 1,
        maxIterations: Int = 100, tolerance: Double = 1e-3, regularization: Double = 1e-6, seed: Int = 0
    ) {
        (self.componentCount, self.covariance, self.initCount) = (componentCount, covariance, initCount)
        (self.maxIterations, self.tolerance, self.regularization, self.seed) =
            (maxIterations, tolerance, regularization, seed)
    }

    /// Fits the mixture; returns the model and the maximum-posterior label of every point.
    /// - Throws: the errors of `KMeans.fit`, and `.invalidArgument` for a covariance that is not positive
    ///   definite after regularisation.
    public func fit(_ points: FeatureMatrix) throws -> (model: MixtureModel, labels: [Int32]) {
        guard initCount >= 1, maxIterations >= 1 else {
            throw ClassicalError.invalidArgument("a Gaussian mixture needs initCount and maxIterations ≥ 1")
        }
        var best: MixtureModel?
        for restart in 0..<initCount {
            var stream = SeededGenerator.stream(seed: seed, index: restart)
            let restartSeed = Int(truncatingIfNeeded: stream.next() >> 1)
            let kmeans = try KMeans(clusterCount: componentCount, initCount: 1, seed: restartSeed).fit(points)
            var responsibilities = [Double](repeating: 0, count: points.count * componentCount)
            for (point, label) in kmeans.labels.enumerated() {
                responsibilities[point * componentCount + Int(label)] = 1
            }
            var model = maximization(points, responsibilities: responsibilities)
            var bound = -Double.infinity
            model.converged = false
            for iteration in 1...maxIterations {
                let densities = try model.weightedLogDensities(points)
                var total = 0.0
                for point in 0..<points.count {
                    let row = point * componentCount
                    let norm = MixtureModel.logSumExp(densities[row..<(row + componentCount)])
                    total += norm
                    for component in 0..<componentCount {
                        responsibilities[row + component] = exp(densities[row + component] - norm)
                    }
                }
                let previous = bound
                bound = total / Double(points.count)
                model = maximization(points, responsibilities: responsibilities)
                model.iterations = iteration
                model.meanLogLikelihood = bound
                if abs(bound - previous) < tolerance {
                    model.converged = true
                    break
                }
            }
            if model.meanLogLikelihood > best?.meanLogLikelihood ?? -.infinity || best == nil { best = model }
        }
        guard let model = best else { throw ClassicalError.invalidArgument("no restart ran") }
        let labels = try DecisionRules.maximumPosterior(model, points)
        return (model, labels)
    }

    /// The M-step (`_estimate_gaussian_parameters`): weights, means and regularised covariances.
    func maximization(_ points: FeatureMatrix, responsibilities: [Double]) -> MixtureModel {
        let (k, dimension, n) = (componentCount, points.dimension, points.count)
        var weights = [Double](repeating: 10 * Double.ulpOfOne, count: k)
        var means = [Double](repeating: 0, count: k * dimension)
        for point in 0..<n {
            for component in 0..<k {
                let r = responsibilities[point * k + component]
                weights[component] += r
                for channel in 0..<dimension {
                    means[component * dimension + channel] += r * points.values[point * dimension + channel]
                }
            }
        }
        for component in 0..<k {
            for channel in 0..<dimension { means[component * dimension + channel] /= weights[component] }
        }
        var covariances = [Double](repeating: 0, count: k * dimension * dimension)
        var difference = [Double](repeating: 0, count: dimension)
        for point in 0..<n {
            for component in 0..<k {
                let r = responsibilities[point * k + component]
                if r == 0 { continue }
                for channel in 0..<dimension {
                    difference[channel] =
                        points.values[point * dimension + channel] - means[component * dimension + channel]
                }
                let base = component * dimension * dimension
                for row in 0..<dimension {
                    for column in 0..<dimension where covariance == .full || row == column {
                        covariances[base + row * dimension + column] += r * difference[row] * difference[column]
                    }
                }
            }
        }
        for component in 0..<k {
            let base = component * dimension * dimension
            for position in 0..<(dimension * dimension) { covariances[base + position] /= weights[component] }
            for channel in 0..<dimension { covariances[base + channel * dimension + channel] += regularization }
        }
        let total = weights.reduce(0, +)
        return MixtureModel(
            covariance: covariance, weights: weights.map { $0 / total },
            means: FeatureMatrix(count: k, dimension: dimension, values: means),
            covariances: covariances, meanLogLikelihood: -.infinity, iterations: 0, converged: false)
    }
}

/// Cholesky factorisation of small symmetric positive-definite matrices (lower triangle, row-major).
enum Cholesky {
    /// L with L·Lᵀ = matrix, or nil when the matrix is not positive definite.
    static func factor(_ matrix: [Double], dimension: Int) -> [Double]? {
        var lower = [Double](repeating: 0, count: dimension * dimension)
        for row in 0..<dimension {
            for column in 0...row {
                var sum = matrix[row * dimension + column]
                for inner in 0..<column { sum -= lower[row * dimension + inner] * lower[column * dimension + inner] }
                if row == column {
                    guard sum > 0, sum.isFinite else { return nil }
                    lower[row * dimension + row] = sum.squareRoot()
                } else {
                    lower[row * dimension + column] = sum / lower[column * dimension + column]
                }
            }
        }
        return lower
    }

    /// ‖L⁻¹ v‖² by forward substitution: the squared Mahalanobis norm of v under Σ = L·Lᵀ.
    static func solvedSquaredNorm(_ lower: [Double], _ vector: [Double], dimension: Int) -> Double {
        var solved = [Double](repeating: 0, count: dimension)
        var norm = 0.0
        for row in 0..<dimension {
            var sum = vector[row]
            for inner in 0..<row { sum -= lower[row * dimension + inner] * solved[inner] }
            solved[row] = sum / lower[row * dimension + row]
            norm += solved[row] * solved[row]
        }
        return norm
    }
}
