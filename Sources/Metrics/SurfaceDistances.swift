/// Distances between the surfaces of a predicted and a reference mask of one class, spacing-aware.
///
/// Each surface voxel of one mask gets the Euclidean distance (voxel centre to voxel centre, mm) to the
/// nearest surface voxel of the other, through `DistanceTransform`; the transform runs over the bounding box
/// of both masks only, which changes no distance. Matches MONAI's `get_edge_surface_distance` and medpy's
/// `__surface_distances` (both in float64 here: MONAI rounds distances to float32, see the README).
public struct SurfaceDistances: Sendable {
    /// Distances from each predicted surface voxel to the reference surface (mm), in voxel order.
    public let predictionToReference: [Double]
    /// Distances from each reference surface voxel to the predicted surface (mm), in voxel order.
    public let referenceToPrediction: [Double]

    /// - Parameters:
    ///   - prediction, reference: binary masks over `shape`.
    ///   - shape: 2 or 3 axes; `spacing` in mm per axis.
    /// - Throws: `MetricsError.unsupportedShape`, `.invalidSpacing`, `.shapeMismatch`.
    public init(prediction: [Bool], reference: [Bool], shape: [Int], spacing: [Double]) throws {
        guard (2...3).contains(shape.count), shape.allSatisfy({ $0 > 0 }) else {
            throw MetricsError.unsupportedShape(shape)
        }
        guard spacing.count == shape.count, spacing.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw MetricsError.invalidSpacing(spacing)
        }
        let count = shape.reduce(1, *)
        guard prediction.count == count, reference.count == count else {
            throw MetricsError.shapeMismatch(reference: [reference.count], prediction: [prediction.count])
        }
        guard let box = BoundingBox(prediction, reference, shape: shape) else {
            (predictionToReference, referenceToPrediction) = ([], [])
            return
        }
        // Surfaces on the full grid (erosion must see the image border), then cropped to the box.
        let predictedSurface = box.crop(Surface.of(prediction, shape: shape))
        let referenceSurface = box.crop(Surface.of(reference, shape: shape))
        predictionToReference = Self.directed(from: predictedSurface, to: referenceSurface, box.shape, spacing)
        referenceToPrediction = Self.directed(from: referenceSurface, to: predictedSurface, box.shape, spacing)
    }

    /// The distances of a class absent from both masks: every distance metric is NaN.
    public static let bothEmpty = SurfaceDistances(predictionToReference: [], referenceToPrediction: [])

    private init(predictionToReference: [Double], referenceToPrediction: [Double]) {
        (self.predictionToReference, self.referenceToPrediction) = (predictionToReference, referenceToPrediction)
    }

    private static func directed(
        from source: [Bool], to target: [Bool], _ shape: [Int],
        _ spacing: [Double]
    ) -> [Double] {
        guard source.contains(true) else { return [] }
        guard target.contains(true) else {
            return [Double](repeating: .infinity, count: source.lazy.filter { $0 }.count)
        }
        let squared = DistanceTransform.squaredDistances(features: target, shape: shape, spacing: spacing)
        var distances: [Double] = []
        for i in 0..<source.count where source[i] { distances.append(squared[i].squareRoot()) }
        return distances
    }

    // MARK: - Metrics

    /// The Hausdorff distance: the largest distance in either direction. NaN when both masks are empty, +∞ when
    /// one is. MONAI `compute_hausdorff_distance`, medpy `hd`.
    public var hausdorff: Double {
        guard let empty = emptyValue else {
            return Swift.max(predictionToReference.max() ?? 0, referenceToPrediction.max() ?? 0)
        }
        return empty
    }

    /// The 95th-percentile Hausdorff distance under `definition` (numpy linear interpolation).
    public func hausdorff95(_ definition: HD95Definition) -> Double {
        hausdorffPercentile(95, definition)
    }

    /// The `percentile`-th Hausdorff distance: `.max` takes the larger of the two directed percentiles
    /// (MONAI `compute_hausdorff_distance(percentile=)`), `.pooled` the percentile of both directions together
    /// (medpy `hd95`).
    public func hausdorffPercentile(_ percentile: Double, _ definition: HD95Definition) -> Double {
        if let empty = emptyValue { return empty }
        switch definition {
        case .max:
            return Swift.max(
                Statistics.percentile(predictionToReference, percentile),
                Statistics.percentile(referenceToPrediction, percentile))
        case .pooled:
            return Statistics.percentile(predictionToReference + referenceToPrediction, percentile)
        }
    }

    /// The average symmetric surface distance as MONAI `compute_average_surface_distance(symmetric=True)` and
    /// medpy 0.5 `assd`: the mean of both directions' distances pooled, Σd / (|S_pred| + |S_ref|).
    public var averageSymmetricSurfaceDistance: Double {
        if let empty = emptyValue { return empty }
        let total = predictionToReference.reduce(0, +) + referenceToPrediction.reduce(0, +)
        return total / Double(predictionToReference.count + referenceToPrediction.count)
    }

    /// The normalised surface distance (surface Dice) at `toleranceMM`: the fraction of both surfaces within the
    /// tolerance of the other, as MONAI `compute_surface_dice` without sub-voxels. NaN when both masks are
    /// empty, 0 when exactly one is.
    public func normalizedSurfaceDistance(toleranceMM: Double) -> Double {
        let total = predictionToReference.count + referenceToPrediction.count
        guard total > 0 else { return .nan }
        let within =
            predictionToReference.lazy.filter { $0 <= toleranceMM }.count
            + referenceToPrediction.lazy.filter { $0 <= toleranceMM }.count
        return Double(within) / Double(total)
    }

    /// NaN when both surfaces are empty, +∞ when one is, nil otherwise.
    private var emptyValue: Double? {
        switch (predictionToReference.isEmpty, referenceToPrediction.isEmpty) {
        case (true, true): return .nan
        case (false, false): return nil
        default: return .infinity
        }
    }
}

/// The bounding box of the union of two masks.
struct BoundingBox {
    let shape: [Int]
    let lower: [Int]
    private let fullShape: [Int]

    init?(_ a: [Bool], _ b: [Bool], shape full: [Int]) {
        let extents = full.count == 3 ? full : [1] + full
        var low = extents
        var high = [-1, -1, -1]
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                var i = 0
                for z in 0..<extents[0] {
                    for y in 0..<extents[1] {
                        var first = -1
                        var last = -1
                        for x in 0..<extents[2] {
                            if a[i] || b[i] {
                                if first < 0 { first = x }
                                last = x
                            }
                            i += 1
                        }
                        guard first >= 0 else { continue }
                        low = [Swift.min(low[0], z), Swift.min(low[1], y), Swift.min(low[2], first)]
                        high = [Swift.max(high[0], z), Swift.max(high[1], y), Swift.max(high[2], last)]
                    }
                }
            }
        }
        guard high[0] >= 0 else { return nil }
        let boxShape = (0..<3).map { high[$0] - low[$0] + 1 }
        fullShape = extents
        lower = low
        shape = full.count == 3 ? boxShape : Array(boxShape.dropFirst())
    }

    /// The part of `values` (over the full shape) inside the box, row-major.
    func crop(_ values: [Bool]) -> [Bool] {
        let box = shape.count == 3 ? shape : [1] + shape
        var out = [Bool](repeating: false, count: box.reduce(1, *))
        let plane = fullShape[1] * fullShape[2]
        var o = 0
        for z in 0..<box[0] {
            for y in 0..<box[1] {
                let start = (lower[0] + z) * plane + (lower[1] + y) * fullShape[2] + lower[2]
                for x in 0..<box[2] {
                    out[o] = values[start + x]
                    o += 1
                }
            }
        }
        return out
    }
}
