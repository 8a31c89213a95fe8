import SliceLabSupport

/// Per-region measurements of a region map.
public struct RegionStatistics: Sendable, Equatable {
    public let id: Int32
    /// Pixels (voxels) in the region.
    public var area: Int
    /// The mean feature vector (color in the chosen space, or intensity) of the region's pixels.
    public var meanFeature: [Double]
    /// Inclusive lower corner (slice, row, column).
    public var minimum: [Int]
    /// Inclusive upper corner (slice, row, column).
    public var maximum: [Int]

    /// Statistics of every region id 1...count of `regions` (id 0 is skipped: unlabelled).
    /// - Parameter features: one row per pixel, or nil for no mean feature.
    /// - Throws: `ClassicalError.shapeMismatch` when `features` has another pixel count.
    public static func measure(_ regions: LabelGrid<Int32>, features: FeatureMatrix? = nil) throws -> [RegionStatistics]
    {
        if let features, features.count != regions.shape.count {
            throw ClassicalError.shapeMismatch("\(features.count) feature rows for \(regions.shape.count) pixels")
        }
        let count = regions.labelBound
        let dimension = features?.dimension ?? 0
        let shape = regions.shape
        var statistics = (0..<count).map {
            RegionStatistics(
                id: Int32($0), area: 0, meanFeature: [Double](repeating: 0, count: dimension),
                minimum: [Int.max, Int.max, Int.max], maximum: [-1, -1, -1])
        }
        var index = 0
        for z in 0..<shape.slices {
            for y in 0..<shape.rows {
                for x in 0..<shape.columns {
                    let id = Int(regions.labels[index])
                    if id > 0 {
                        statistics[id].area += 1
                        if let features {
                            for channel in 0..<dimension {
                                statistics[id].meanFeature[channel] += features.values[index * dimension + channel]
                            }
                        }
                        let corner = [z, y, x]
                        for axis in 0..<3 {
                            statistics[id].minimum[axis] = min(statistics[id].minimum[axis], corner[axis])
                            statistics[id].maximum[axis] = max(statistics[id].maximum[axis], corner[axis])
                        }
                    }
                    index += 1
                }
            }
        }
        return statistics.dropFirst().filter { $0.area > 0 }.map { region in
            var region = region
            region.meanFeature = region.meanFeature.map { $0 / Double(region.area) }
            return region
        }
    }
}

/// Removing regions under a minimum size.
public enum RegionMerging {
    /// Merges every connected region of fewer than `minimumSize` pixels into its largest neighbouring region
    /// (by current area, ties to the lower region id), smallest regions first, so the merged map has no region
    /// under `minimumSize` unless it has no neighbour at all (a map of one region).
    ///
    /// - Parameter classes: a class map; regions are its connected components under `connectivity`.
    /// - Returns: the class map after merging, and its connected regions (ids from 1 in raster order).
    /// - Throws: the errors of `ConnectedComponents.label`.
    public static func mergeSmallRegions(
        _ classes: LabelGrid<Int32>, minimumSize: Int,
        connectivity: Int = 1
    ) throws -> (classes: LabelGrid<Int32>, regions: LabelGrid<Int32>) {
        let (regions, count) = try ConnectedComponents.label(classes, connectivity: connectivity)
        guard minimumSize > 1, count > 1 else { return (classes, regions) }
        let shape = classes.shape
        var area = [Int](repeating: 0, count: count + 1)
        var regionClass = [Int32](repeating: 0, count: count + 1)
        for index in 0..<shape.count {
            area[Int(regions.labels[index])] += 1
            regionClass[Int(regions.labels[index])] = classes.labels[index]
        }
        var neighbours = [Set<Int>](repeating: [], count: count + 1)
        let offsets = ConnectedComponents.precedingOffsets(rank: shape.isVolume ? 3 : 2, connectivity: connectivity)
        var index = 0
        for z in 0..<shape.slices {
            for y in 0..<shape.rows {
                for x in 0..<shape.columns {
                    let here = Int(regions.labels[index])
                    for offset in offsets {
                        let (nz, ny, nx) = (z + offset.0, y + offset.1, x + offset.2)
                        guard nz >= 0, ny >= 0, ny < shape.rows, nx >= 0, nx < shape.columns else { continue }
                        let there = Int(regions.labels[(nz * shape.rows + ny) * shape.columns + nx])
                        if there != here {
                            neighbours[here].insert(there)
                            neighbours[there].insert(here)
                        }
                    }
                    index += 1
                }
            }
        }
        var parent = Array(0...count)
        func root(_ region: Int) -> Int {
            var node = region
            while parent[node] != node { node = parent[node] }
            return node
        }
        let small = (1...count).filter { area[$0] < minimumSize }.sorted { (area[$0], $0) < (area[$1], $1) }
        for region in small {
            let current = root(region)
            guard current == region, area[current] < minimumSize else { continue }
            let candidates = Set(neighbours[current].map(root)).subtracting([current])
            guard let target = candidates.max(by: { (area[$0], -$0) < (area[$1], -$1) }) else { continue }
            parent[current] = target
            area[target] += area[current]
            neighbours[target].formUnion(neighbours[current])
        }
        var merged = classes
        for index in 0..<shape.count {
            merged.labels[index] = regionClass[root(Int(regions.labels[index]))]
        }
        let relabelled = try ConnectedComponents.label(merged, connectivity: connectivity).regions
        return (merged, relabelled)
    }
}
