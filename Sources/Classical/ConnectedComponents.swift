import SliceLabSupport

/// Connected-component labelling of label maps, as `skimage.measure.label`.
public enum ConnectedComponents {
    /// The neighbour offsets (dz, dy, dx) that precede a pixel in raster order, for `connectivity` 1...rank
    /// (skimage's meaning: neighbours differ by ±1 in at most `connectivity` coordinates; 2-D: 1 → 4, 2 → 8;
    /// 3-D: 1 → 6, 2 → 18, 3 → 26).
    static func precedingOffsets(rank: Int, connectivity: Int) -> [(Int, Int, Int)] {
        var offsets: [(Int, Int, Int)] = []
        let zRange = rank == 3 ? -1...1 : 0...0
        for dz in zRange {
            for dy in -1...1 {
                for dx in -1...1 {
                    let nonZero = (dz != 0 ? 1 : 0) + (dy != 0 ? 1 : 0) + (dx != 0 ? 1 : 0)
                    guard nonZero > 0, nonZero <= connectivity else { continue }
                    if (dz, dy, dx) < (0, 0, 0) { offsets.append((dz, dy, dx)) }
                }
            }
        }
        return offsets
    }

    /// All neighbour offsets (both directions) for `connectivity`.
    static func allOffsets(rank: Int, connectivity: Int) -> [(Int, Int, Int)] {
        let preceding = precedingOffsets(rank: rank, connectivity: connectivity)
        return preceding + preceding.map { (-$0.0, -$0.1, -$0.2) }
    }

    /// Throws unless `connectivity` is 1...rank.
    static func checkConnectivity(_ connectivity: Int, shape: GridShape) throws {
        let rank = shape.isVolume ? 3 : 2
        guard (1...rank).contains(connectivity) else {
            throw ClassicalError.invalidArgument(
                "connectivity must be 1...\(rank) for a \(rank)-D image, not \(connectivity)")
        }
    }

    /// Labels the connected regions of equal value.
    ///
    /// Pixels equal to `background` (if given) get region 0; every other pixel gets a region id from 1,
    /// numbered in raster order of each region's first pixel — the same numbering as
    /// `skimage.measure.label(map, background=…, connectivity=…)`.
    /// Two-pass union-find; O(n α(n)).
    /// - Returns: the region map and the number of regions.
    /// - Throws: `ClassicalError.invalidArgument` for a connectivity outside 1...rank, `.emptyInput`.
    public static func label(
        _ map: LabelGrid<Int32>, connectivity: Int = 1,
        background: Int32? = nil
    ) throws -> (regions: LabelGrid<Int32>, count: Int) {
        try map.shape.validate()
        try checkConnectivity(connectivity, shape: map.shape)
        let shape = map.shape
        let (slices, rows, columns) = (shape.slices, shape.rows, shape.columns)
        let offsets = precedingOffsets(rank: shape.isVolume ? 3 : 2, connectivity: connectivity)
        let linear = offsets.map { ($0.0 * rows + $0.1) * columns + $0.2 }
        // What each offset needs to stay inside the grid: bit 0 a previous slice, 1 a previous row, 2 a next
        // row, 3 a previous column, 4 a next column.
        let needs = offsets.map { offset -> Int in
            (offset.0 < 0 ? 1 : 0) | (offset.1 < 0 ? 2 : 0) | (offset.1 > 0 ? 4 : 0)
                | (offset.2 < 0 ? 8 : 0) | (offset.2 > 0 ? 16 : 0)
        }
        var parent = [Int32](repeating: -1, count: shape.count)
        parent.withUnsafeMutableBufferPointer { parents in
            map.labels.withUnsafeBufferPointer { values in
                linear.withUnsafeBufferPointer { linear in
                    needs.withUnsafeBufferPointer { needs in
                        @inline(__always) func root(_ index: Int32) -> Int32 {
                            var node = index
                            while parents[Int(node)] != node { node = parents[Int(node)] }
                            var walk = index
                            while parents[Int(walk)] != node {
                                let next = parents[Int(walk)]
                                parents[Int(walk)] = node
                                walk = next
                            }
                            return node
                        }
                        let offsetCount = linear.count
                        let hasBackground = background != nil
                        let backgroundValue = background ?? 0
                        // Joins pixel `index` to its equal preceding neighbours; `all` skips the bounds mask
                        // (interior pixels, where every preceding neighbour exists).
                        @inline(__always) func visit(_ index: Int, available: Int, all: Bool) {
                            let value = values[index]
                            if hasBackground, value == backgroundValue { return }
                            var current: Int32 = -1
                            for position in 0..<offsetCount where all || needs[position] & ~available == 0 {
                                let neighbour = index + linear[position]
                                guard values[neighbour] == value else { continue }
                                if current >= 0, parents[neighbour] == current { continue }
                                let neighbourRoot = root(Int32(neighbour))
                                if current < 0 {
                                    current = neighbourRoot
                                } else if neighbourRoot != current {
                                    // The smaller index stays root, so a root is its region's first pixel.
                                    if neighbourRoot < current {
                                        parents[Int(current)] = neighbourRoot
                                        current = neighbourRoot
                                    } else {
                                        parents[Int(neighbourRoot)] = current
                                    }
                                }
                            }
                            parents[index] = current < 0 ? Int32(index) : current
                        }
                        let full = shape.isVolume ? 31 : 30
                        if connectivity == 1, !hasBackground {
                            // The common 4-/6-connected case, specialised. The left pixel's parent is already a
                            // root (nothing has been joined since it was set). A neighbour already joined through
                            // a shared equal pixel is skipped: up when up-left equals left and up; the previous
                            // slice's pixel when it and the left (or up) pixel share an equal corner pixel.
                            let plane = rows * columns
                            @inline(__always) func join(_ other: Int, _ current: inout Int32) {
                                let otherRoot = root(Int32(other))
                                if current < 0 {
                                    current = otherRoot
                                } else if otherRoot < current {
                                    parents[Int(current)] = otherRoot
                                    current = otherRoot
                                } else if otherRoot > current {
                                    parents[Int(otherRoot)] = current
                                }
                            }
                            var index = 0
                            for z in 0..<slices {
                                for y in 0..<rows {
                                    for x in 0..<columns {
                                        let value = values[index]
                                        let left = x > 0 && values[index - 1] == value
                                        var current: Int32 = left ? parents[index - 1] : -1
                                        let up = y > 0 && values[index - columns] == value
                                        if up, !(left && values[index - columns - 1] == value) {
                                            join(index - columns, &current)
                                        }
                                        if z > 0, values[index - plane] == value,
                                            !(left && values[index - plane - 1] == value),
                                            !(up && values[index - plane - columns] == value)
                                        {
                                            join(index - plane, &current)
                                        }
                                        parents[index] = current < 0 ? Int32(index) : current
                                        index += 1
                                    }
                                }
                            }
                            return
                        }
                        for z in 0..<slices {
                            let slicePart = z > 0 ? 1 : 0
                            for y in 0..<rows {
                                let rowPart = slicePart | (y > 0 ? 2 : 0) | (y < rows - 1 ? 4 : 0)
                                let rowStart = (z * rows + y) * columns
                                let interiorRow = rowPart | 24 == full
                                for x in 0..<columns {
                                    let available = rowPart | (x > 0 ? 8 : 0) | (x < columns - 1 ? 16 : 0)
                                    visit(
                                        rowStart + x, available: available,
                                        all: interiorRow && x > 0 && x < columns - 1)
                                }
                            }
                        }
                    }
                }
            }
        }
        // Second pass: number roots in raster order (a root is its region's first pixel).
        var regions = [Int32](repeating: 0, count: shape.count)
        var count: Int32 = 0
        parent.withUnsafeMutableBufferPointer { parents in
            for index in 0..<shape.count {
                let link = parents[index]
                if link < 0 { continue }
                if link == Int32(index) {
                    count += 1
                    regions[index] = count
                } else {
                    // Roots precede their members, and every chain was compressed towards earlier indices.
                    var node = Int(link)
                    while parents[node] != Int32(node) { node = Int(parents[node]) }
                    parents[index] = Int32(node)
                    regions[index] = regions[node]
                }
            }
        }
        return (LabelGrid(shape: shape, labels: regions), Int(count))
    }
}
