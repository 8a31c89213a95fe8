import Classical

/// k-means with k-means++ seeding and `initCount` restarts, as scikit-learn's `KMeans`.
struct KMeansMethod: ClassicalMethod {
    static let name = "kmeans"

    static func cluster(_ features: ClassicalSegmentation.Features, options: ClusterOptions) throws -> Clustering {
        let result = try KMeans(clusterCount: options.classes, initCount: options.initCount, seed: options.seed)
            .fit(features.points)
        return Clustering(
            labels: result.labels, centers: result.centers, inertia: result.inertia,
            iterations: result.iterations)
    }
}

/// Fuzzy c-means, each pixel given to the cluster of its largest membership.
struct FuzzyCMeansMethod: ClassicalMethod {
    static let name = "fcm"

    static func cluster(_ features: ClassicalSegmentation.Features, options: ClusterOptions) throws -> Clustering {
        let result = try FuzzyCMeans(clusterCount: options.classes, seed: options.seed).fit(features.points)
        return Clustering(
            labels: try DecisionRules.maximumMembership(result.memberships, classCount: options.classes),
            centers: result.centers, iterations: result.iterations)
    }
}

/// A Gaussian mixture fitted by EM with `initCount` restarts, as scikit-learn's `GaussianMixture`.
struct GaussianMixtureMethod: ClassicalMethod {
    static let name = "gmm"

    static func cluster(_ features: ClassicalSegmentation.Features, options: ClusterOptions) throws -> Clustering {
        let (model, labels) = try GaussianMixture(
            componentCount: options.classes, initCount: options.initCount,
            seed: options.seed
        ).fit(features.points)
        return Clustering(labels: labels, centers: model.means, iterations: model.iterations)
    }
}
