import Classical

/// Otsu's threshold (two classes) on the gray or lightness channel, as scikit-image's `threshold_otsu`.
struct OtsuMethod: ClassicalMethod {
    static let name = "otsu"
    static let makesOneClass = false

    static func check(classes: Int) throws {
        guard classes == 2 else { throw InferenceError.otsuMakesTwoClasses(classes: classes) }
    }

    static func cluster(_ features: ClassicalSegmentation.Features, options: ClusterOptions) throws -> Clustering {
        let values = try ClassicalSegmentation.oneChannel(features, space: options.space, method: .otsu)
        let threshold = try Thresholding.otsu(values)
        return Clustering(labels: values.doubles.map { $0 > threshold ? 1 : 0 }, thresholds: [threshold])
    }
}

/// Multi-Otsu thresholds (K classes), as scikit-image's `threshold_multiotsu`.
struct MultiOtsuMethod: ClassicalMethod {
    static let name = "multiotsu"
    static let makesOneClass = false

    static func cluster(_ features: ClassicalSegmentation.Features, options: ClusterOptions) throws -> Clustering {
        let values = try ClassicalSegmentation.oneChannel(features, space: options.space, method: .multiotsu)
        let found = try Thresholding.multiOtsu(values, classes: options.classes)
        return Clustering(labels: Thresholding.digitize(values.doubles, thresholds: found), thresholds: found)
    }
}

/// Histogram modes: valleys between the K main peaks of a gray histogram, or the K peaks of a colour
/// histogram with every pixel given to its nearest peak.
struct HistogramMethod: ClassicalMethod {
    static let name = "histogram"
    static let makesOneClass = false

    static func cluster(_ features: ClassicalSegmentation.Features, options: ClusterOptions) throws -> Clustering {
        if features.points.dimension == 1 {
            let values = try ClassicalSegmentation.oneChannel(features, space: options.space, method: .histogram)
            let found = try HistogramModes.valleyThresholds(values.doubles, classes: options.classes)
            return Clustering(labels: Thresholding.digitize(values.doubles, thresholds: found), thresholds: found)
        }
        let peaks = try HistogramModes.colorPeaks(features.points, classes: options.classes)
        return Clustering(labels: try DecisionRules.nearestCenter(features.points, centers: peaks), centers: peaks)
    }
}
