import Classical
import Foundation
import SliceLabIO
import SliceLabSupport

/// The color space pixels are clustered in (`Classical.ColorSpace`), named here so the executable needs only
/// `SliceLab`.
public typealias ClusterSpace = ColorSpace

/// The settings of one `slicelab cluster` run; stored as attributes of the HDF5 it writes.
public struct ClusterOptions: Sendable {
    public var method: ClusterMethod
    public var classes: Int
    public var space: ColorSpace
    public var seed: Int
    /// Restarts for k-means and the Gaussian mixture.
    public var initCount: Int
    public var regularize: PostProcessingPipeline
    /// Regions smaller than this many pixels are merged into their largest neighbour (0 or 1: none).
    public var minRegion: Int
    /// 1: 4-/6-connected regions; 2: 8-connected in 2-D, 26-connected in 3-D.
    public var connectivity: Int
    /// The Potts interaction weight for `--regularize mrf`.
    public var beta: Double
    /// Whether a volume's stages are reported on standard error (`cluster` does; `compare`, which reports per
    /// case, does not).
    public var showsProgress = true

    public init(
        method: ClusterMethod, classes: Int, space: ColorSpace = .gray, seed: Int = 0, initCount: Int = 10,
        regularize: PostProcessingPipeline = .none, minRegion: Int = 0, connectivity: Int = 1, beta: Double = 1
    ) {
        (self.method, self.classes, self.space, self.seed, self.initCount) = (method, classes, space, seed, initCount)
        (self.regularize, self.minRegion, self.connectivity, self.beta) = (regularize, minRegion, connectivity, beta)
    }
}

/// What a cluster run produced, before it is written.
public struct ClusterOutcome: Sendable {
    /// [rows, columns] for one image, [slices, rows, columns] for a volume.
    public var shape: GridShape
    /// Classes 0..<K, ordered by increasing mean intensity (gray) or L* (color).
    public var labels: [Int32]
    /// Connected regions of equal class, ids from 1 in raster order.
    public var regions: [Int32]
    public var regionCount: Int
    /// K × D class centres in the chosen space, in class order (kmeans, fcm, gmm, color histogram peaks).
    public var centers: FeatureMatrix?
    /// K − 1 ascending thresholds (otsu, multiotsu, 1-D histogram valleys).
    public var thresholds: [Double]?
    /// k-means' inertia in the chosen space.
    public var inertia: Double?
    public var iterations: Int
    /// Seconds per stage (features, cluster, regularize, regions), for `SLICELAB_TIMINGS`.
    public var timings: [(stage: String, seconds: Double)]
}

/// An image segmented by a classical method (`ClassicalMethods`): features in the chosen colour space, clusters
/// ordered by intensity, an optional post-processing step, and connected regions. `cluster` and `compare`'s
/// classical runs both rest on it.
public enum ClassicalSegmentation {
    /// Clusters an image already in memory.
    public static func cluster(_ image: ScanImage, options: ClusterOptions) throws -> ClusterOutcome {
        do {
            return try clusterValidated(image, options: options)
        } catch let error as ClassicalError {
            throw InputError.invalidContent(
                file: image.source,
                reason: "cluster --method \(options.method.rawValue): "
                    + error.description)
        }
    }

    // MARK: - Features

    /// Pixels as points in the chosen space, the gray/L* value that orders classes, and 1-D intensities with
    /// their histogram type (integers when every value is integral, as 8/16-bit and CT images are).
    struct Features {
        var points: FeatureMatrix
        var lightness: [Double]
        var shape: GridShape
    }

    static func features(_ image: ScanImage, space: ColorSpace) throws -> Features {
        let shape =
            image.frames > 1
            ? GridShape(slices: image.frames, rows: image.rows, columns: image.columns)
            : GridShape(rows: image.rows, columns: image.columns)
        let count = shape.count
        let values = image.values.map(Double.init)
        if let bad = values.firstIndex(where: { !$0.isFinite }) {
            throw ClassicalError.nonFiniteValue(index: bad / image.channels)
        }
        if image.channels == 1 {
            guard space == .gray else {
                throw InferenceError.colorSpaceNeedsColor(space: space, file: image.source)
            }
            return Features(
                points: FeatureMatrix(count: count, dimension: 1, values: values), lightness: values,
                shape: shape)
        }
        // sRGB in [0, 1]: 8-bit (or float in 0…1 / 0…255) and 16-bit sample ranges.
        let largest = values.max() ?? 0
        let scale = largest <= 1 ? 1.0 : (largest <= 255 ? 255.0 : 65535.0)
        let rgb = FeatureMatrix(count: count, dimension: 3, values: values.map { max(0, min(1, $0 / scale)) })
        let lab = try ColorSpace.lab.convert(rgb)
        let lightness = (0..<count).map { lab.values[$0 * 3] }
        return Features(points: try space.convert(rgb), lightness: lightness, shape: shape)
    }

    /// The single channel the 1-D methods (otsu, multiotsu, histogram valleys) threshold.
    static func oneChannel(_ features: Features, space: ColorSpace, method: ClusterMethod) throws -> Intensities {
        let points = features.points
        if points.dimension == 1 {
            let values = points.values
            let integral = values.allSatisfy { $0 == $0.rounded() && abs($0) < 1e15 }
            return integral ? .integer(values.map { Int($0) }) : .real(values)
        }
        guard let channel = space.lightnessChannel else {
            throw InferenceError.noLightnessChannel(method: method, space: space)
        }
        return .real((0..<points.count).map { points.values[$0 * points.dimension + channel] })
    }

    // MARK: - Clustering

    /// Checks what can be checked before any image is read: the method makes `options.classes` classes and the
    /// regularizer works on labels.
    ///
    /// - Throws: `InferenceError.otsuMakesTwoClasses`, `.tooFewClasses`, `.regularizerNeedsProbabilities`.
    public static func check(_ options: ClusterOptions) throws { _ = try checkedMethod(options) }

    static func checkedMethod(_ options: ClusterOptions) throws -> any ClassicalMethod.Type {
        guard let method = ClassicalMethods.named(options.method) else {
            preconditionFailure("\(options.method) is parsed from the registry")
        }
        try method.check(classes: options.classes)
        if let step = options.regularize.stepNeedingProbabilities {
            throw InferenceError.regularizerNeedsProbabilities(step)
        }
        return method
    }

    static func clusterValidated(_ image: ScanImage, options: ClusterOptions) throws -> ClusterOutcome {
        let method = try checkedMethod(options)
        var timings: [(stage: String, seconds: Double)] = []
        var clock = Date()
        // Volumes take seconds per stage: show progress on stderr (single slices finish at once).
        let progress = image.frames > 1 && options.showsProgress ? ProgressReporter("cluster", total: 4) : nil
        func lap(_ stage: String) {
            timings.append((stage, Date().timeIntervalSince(clock)))
            clock = Date()
            progress?.advance(status: stage)
        }
        let features = try features(image, space: options.space)
        lap("features")
        let k = options.classes
        var clustering = try method.cluster(features, options: options)
        lap("cluster")
        // Classes ordered by increasing mean intensity (gray) or L* (color).
        let order = try ClassMapping.intensityOrder(
            clusters: clustering.labels, intensity: features.lightness,
            clusterCount: k)
        let labels = try order.apply(clustering.labels)
        if let unordered = clustering.centers {
            var values = unordered.values
            for cluster in 0..<unordered.count {
                let rank = Int(order.classOf[cluster])
                for channel in 0..<unordered.dimension {
                    values[rank * unordered.dimension + channel] =
                        unordered.values[cluster * unordered.dimension + channel]
                }
            }
            clustering.centers = FeatureMatrix(count: unordered.count, dimension: unordered.dimension, values: values)
        }
        let ordered = LabelGrid<Int32>(shape: features.shape, labels: labels)
        let context = PostProcessingContext(
            classCount: k, beta: options.beta,
            unaryCost: { gaussianCost(features.points, ordered, k) })
        var classMap = try options.regularize.apply(ordered, context: context)
        lap("regularize")
        // --connectivity 2 is the full neighbourhood: 8 in 2-D, 26 in 3-D (skimage's connectivity = ndim).
        let connectivity = options.connectivity == 1 ? 1 : (features.shape.isVolume ? 3 : 2)
        let regions: LabelGrid<Int32>
        if options.minRegion > 1 {
            (classMap, regions) = try RegionMerging.mergeSmallRegions(
                classMap, minimumSize: options.minRegion,
                connectivity: connectivity)
        } else {
            regions = try ConnectedComponents.label(classMap, connectivity: connectivity).regions
        }
        lap("regions")
        return ClusterOutcome(
            shape: features.shape, labels: classMap.labels, regions: regions.labels,
            regionCount: regions.labelBound - 1, centers: clustering.centers,
            thresholds: clustering.thresholds, inertia: clustering.inertia,
            iterations: clustering.iterations, timings: timings)
    }

    /// The Potts data term ‖x − μ_k‖² / 2σ², with μ_k the class means of the current map and σ² the pooled
    /// within-class variance per feature (1 when the classes are pure).
    static func gaussianCost(_ points: FeatureMatrix, _ map: LabelGrid<Int32>, _ k: Int) -> (Int, Int) -> Double {
        let dimension = points.dimension
        var sums = [Double](repeating: 0, count: k * dimension)
        var counts = [Int](repeating: 0, count: k)
        for (index, label) in map.labels.enumerated() {
            counts[Int(label)] += 1
            for channel in 0..<dimension {
                sums[Int(label) * dimension + channel] += points.values[index * dimension + channel]
            }
        }
        let means = (0..<(k * dimension)).map { sums[$0] / Double(max(counts[$0 / dimension], 1)) }
        var spread = 0.0
        for (index, label) in map.labels.enumerated() {
            for channel in 0..<dimension {
                let delta = points.values[index * dimension + channel] - means[Int(label) * dimension + channel]
                spread += delta * delta
            }
        }
        let variance = spread / Double(max(points.count * dimension, 1))
        let scale = variance > 0 ? 1 / (2 * variance) : 1
        return { index, label in
            var sum = 0.0
            for channel in 0..<dimension {
                let delta = points.values[index * dimension + channel] - means[label * dimension + channel]
                sum += delta * delta
            }
            return sum * scale
        }
    }
}
