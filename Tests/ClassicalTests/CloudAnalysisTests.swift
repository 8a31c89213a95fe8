import Classical
import Foundation
import Testing

@Suite struct CloudAnalysisTests {
    static func points(_ section: String, _ key: String) -> (FeatureMatrix, [String: Any]) {
        let entry = (Goldens.section(section)[key] as? [String: Any]) ?? Goldens.section(section)
        let data = Goldens.doubles(entry, "data")
        let dimension = (entry["dimension"] as? Int) ?? 2
        return (FeatureMatrix(count: data.count / dimension, dimension: dimension, values: data), entry)
    }

    /// sklearn KMeans(n_init=10, random_state=0): inertia within 0.1 % (the bound), labels the same
    /// partition on well-separated blobs.
    @Test(arguments: ["separated", "overlapping"], KMeans.Algorithm.allCases)
    func kMeansInertiaMatchesScikitLearnBestOfTen(name: String, algorithm: KMeans.Algorithm) throws {
        let (points, entry) = Self.points("kmeans", name)
        let k = (entry["k"] as? Int) ?? 0
        let result = try KMeans(clusterCount: k, initCount: 10, algorithm: algorithm, seed: 0).fit(points)
        let expected = (entry["inertia"] as? Double) ?? .nan
        #expect(result.inertia <= expected * 1.001, "\(name) \(algorithm): \(result.inertia) vs sklearn \(expected)")
        #expect(result.converged)
        if name == "separated" {
            #expect(samePartition(result.labels, Goldens.ints(entry, "labels")))
        }
    }

    @Test func elkanAndLloydReachTheSameClusteringFromTheSameSeed() throws {
        let (points, _) = Self.points("kmeans", "overlapping")
        let lloyd = try KMeans(clusterCount: 5, initCount: 3, algorithm: .lloyd, seed: 7).fit(points)
        let elkan = try KMeans(clusterCount: 5, initCount: 3, algorithm: .elkan, seed: 7).fit(points)
        #expect(abs(lloyd.inertia - elkan.inertia) <= 1e-9 * lloyd.inertia)
        #expect(lloyd.labels == elkan.labels)
    }

    @Test func kMeansIsReproducibleFromItsSeedAndRefusesTooFewDistinctPoints() throws {
        let (points, _) = Self.points("kmeans", "overlapping")
        let first = try KMeans(clusterCount: 5, initCount: 2, seed: 42).fit(points)
        let second = try KMeans(clusterCount: 5, initCount: 2, seed: 42).fit(points)
        #expect(first == second)
        let few = FeatureMatrix(count: 4, dimension: 1, values: [1, 1, 2, 2])
        #expect(throws: ClassicalError.tooFewDistinctValues(classes: 3, distinct: 2)) {
            try KMeans(clusterCount: 3).fit(few)
        }
        #expect(throws: ClassicalError.nonFiniteValue(index: 1)) {
            try KMeans(clusterCount: 2).fit(FeatureMatrix(count: 3, dimension: 1, values: [0, .nan, 1]))
        }
        #expect(throws: ClassicalError.emptyInput("the points")) {
            try KMeans(clusterCount: 2).fit(FeatureMatrix(count: 0, dimension: 3, values: []))
        }
        // An empty region mask selects no points: every method refuses it with the same error.
        let masked = points.selecting([Bool](repeating: false, count: points.count))
        #expect(throws: ClassicalError.emptyInput("the points")) { try KMeans(clusterCount: 2).fit(masked) }
        #expect(throws: ClassicalError.emptyInput("the points")) { try FuzzyCMeans(clusterCount: 2).fit(masked) }
        #expect(throws: ClassicalError.emptyInput("the points")) {
            try GaussianMixture(componentCount: 2).fit(masked)
        }
        #expect(throws: ClassicalError.emptyInput("the image")) {
            try Thresholding.multiOtsu(Intensities.real([1, 2, 3]).selecting([false, false, false]), classes: 2)
        }
    }

    /// skfuzzy.cluster.cmeans(m=2, error=1e-6, maxiter=300) from the same initial memberships: memberships
    /// within 1e-4 (the bound), centres within 1e-6, the same number of iterations.
    @Test func fuzzyCMeansMatchesScikitFuzzyFromTheSameStart() throws {
        let entry = Goldens.section("fcm")
        let data = Goldens.doubles(entry, "data")
        let points = FeatureMatrix(count: data.count / 2, dimension: 2, values: data)
        let model = FuzzyCMeans(clusterCount: 3, fuzzifier: 2, tolerance: 1e-6, maxIterations: 300)
        let result = try model.fit(points, initialMemberships: Goldens.doubles(entry, "u0"))
        let expected = Goldens.doubles(entry, "u")
        let worst = zip(result.memberships, expected).map { abs($0 - $1) }.max() ?? .infinity
        #expect(result.memberships.count == expected.count && worst < 1e-4, "worst membership difference \(worst)")
        let centerError = zip(result.centers.values, Goldens.doubles(entry, "centers")).map { abs($0 - $1) }.max() ?? 1
        #expect(centerError < 1e-6)
        #expect(result.iterations == (entry["iterations"] as? Int))
        #expect(abs(result.objective - ((entry["jm_last"] as? Double) ?? 0)) < 1e-6 * result.objective)
    }

    /// sklearn GaussianMixture(3, n_init=3, tol=1e-6) on well-separated anisotropic blobs: means within 1e-3,
    /// weights within 1e-3, mean log-likelihood within 1e-4 (both find the same optimum; different k-means
    /// starts), labels the same partition.
    @Test(arguments: [MixtureModel.Covariance.full, .diagonal])
    func gaussianMixtureFindsScikitLearnsOptimum(covariance: MixtureModel.Covariance) throws {
        let golden = Goldens.section("gmm")
        let entry = golden[covariance == .full ? "full" : "diag"] as? [String: Any] ?? [:]
        let data = Goldens.doubles(golden, "data")
        let points = FeatureMatrix(count: data.count / 2, dimension: 2, values: data)
        let (model, labels) = try GaussianMixture(
            componentCount: 3, covariance: covariance, initCount: 3,
            maxIterations: 500, tolerance: 1e-6
        ).fit(points)
        let order = (0..<3).sorted { model.means.values[$0 * 2] < model.means.values[$1 * 2] }
        let means = order.flatMap { model.means.row($0) }
        let weights = order.map { model.weights[$0] }
        #expect(zip(means, Goldens.doubles(entry, "means")).allSatisfy { abs($0 - $1) < 1e-3 }, "\(means)")
        #expect(zip(weights, Goldens.doubles(entry, "weights")).allSatisfy { abs($0 - $1) < 1e-3 })
        let expectedLikelihood = (entry["mean_log_likelihood"] as? Double) ?? .nan
        #expect(
            abs(model.meanLogLikelihood - expectedLikelihood) < 1e-4,
            "\(model.meanLogLikelihood) vs \(expectedLikelihood)")
        #expect(samePartition(labels, Goldens.ints(entry, "labels")))
        #expect(model.converged)
    }

    @Test func decisionRulesPickNearestCentreLargestMembershipAndMahalanobisShape() throws {
        let points = FeatureMatrix(count: 3, dimension: 2, values: [0, 0, 3, 0, 0, 3])
        let centers = FeatureMatrix(count: 2, dimension: 2, values: [0, 0, 4, 4])
        #expect(try DecisionRules.nearestCenter(points, centers: centers) == [0, 0, 0])
        // Class 1 is very elongated along x: (3, 0) is nearer to it in the Mahalanobis sense.
        let covariances: [Double] = [1, 0, 0, 1, 100, 0, 0, 0.5]
        let mahalanobis = try DecisionRules.nearestCenter(
            FeatureMatrix(count: 1, dimension: 2, values: [-6, 4]), centers: centers,
            metric: .mahalanobis(covariances: covariances))
        #expect(mahalanobis == [1])
        #expect(try DecisionRules.maximumMembership([0.2, 0.7, 0.8, 0.3], classCount: 2) == [1, 0])
        #expect(throws: ClassicalError.self) {
            try DecisionRules.nearestCenter(points, centers: FeatureMatrix(count: 1, dimension: 3, values: [0, 0, 0]))
        }
    }
}
