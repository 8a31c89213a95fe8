import SliceLabSupport

/// Smoothing a label map after the fact; works on any label map (classical or a network's output).
public enum Regularization {
    /// Visits every pixel with the indices of its in-bounds neighbours under `connectivity`.
    static func forEachPixel(
        _ shape: GridShape, connectivity: Int,
        _ body: (_ index: Int, _ neighbours: [Int]) -> Void
    ) {
        let offsets = ConnectedComponents.allOffsets(rank: shape.isVolume ? 3 : 2, connectivity: connectivity)
        var neighbours: [Int] = []
        neighbours.reserveCapacity(offsets.count)
        var index = 0
        for z in 0..<shape.slices {
            for y in 0..<shape.rows {
                for x in 0..<shape.columns {
                    neighbours.removeAll(keepingCapacity: true)
                    for offset in offsets {
                        let (nz, ny, nx) = (z + offset.0, y + offset.1, x + offset.2)
                        guard nz >= 0, nz < shape.slices, ny >= 0, ny < shape.rows, nx >= 0, nx < shape.columns
                        else { continue }
                        neighbours.append((nz * shape.rows + ny) * shape.columns + nx)
                    }
                    body(index, neighbours)
                    index += 1
                }
            }
        }
    }

    static func validate(_ map: LabelGrid<Int32>, connectivity: Int) throws {
        try map.shape.validate()
        try ConnectedComponents.checkConnectivity(connectivity, shape: map.shape)
        if let negative = map.labels.firstIndex(where: { $0 < 0 }) {
            throw ClassicalError.invalidArgument("label \(map.labels[negative]) at pixel \(negative) is negative")
        }
    }

    /// The majority filter: each pixel takes the most frequent label among itself and its neighbours
    /// (3×3 / 3×3×3 window under `connectivity`; 2 in 2-D and 3 in 3-D give the full window). A tie keeps the
    /// pixel's own label when it is among the tied, else the lowest tied label. Repeated `iterations` times
    /// or until nothing changes.
    public static func majority(_ map: LabelGrid<Int32>, connectivity: Int? = nil, iterations: Int = 1) throws
        -> LabelGrid<Int32>
    {
        let connectivity = connectivity ?? (map.shape.isVolume ? 3 : 2)
        try validate(map, connectivity: connectivity)
        var current = map
        var votes = [Int](repeating: 0, count: max(map.labelBound, 1))
        for _ in 0..<max(iterations, 0) {
            var next = current
            var changed = false
            forEachPixel(map.shape, connectivity: connectivity) { index, neighbours in
                let own = Int(current.labels[index])
                votes[own] += 1
                for neighbour in neighbours { votes[Int(current.labels[neighbour])] += 1 }
                var best = own
                for neighbour in neighbours {
                    let label = Int(current.labels[neighbour])
                    if votes[label] > votes[best] || (votes[label] == votes[best] && best != own && label < best) {
                        best = label
                    }
                }
                votes[own] = 0
                for neighbour in neighbours { votes[Int(current.labels[neighbour])] = 0 }
                if best != own {
                    next.labels[index] = Int32(best)
                    changed = true
                }
            }
            current = next
            if !changed { break }
        }
        return current
    }

    // MARK: - Morphology

    /// Binary erosion (`dilate == false`) or dilation of a mask with the connectivity's structuring element.
    static func morph(_ mask: [Bool], shape: GridShape, connectivity: Int, dilate: Bool) -> [Bool] {
        var result = mask
        forEachPixel(shape, connectivity: connectivity) { index, neighbours in
            if dilate {
                if !mask[index], neighbours.contains(where: { mask[$0] }) { result[index] = true }
            } else if mask[index], neighbours.contains(where: { !mask[$0] }) {
                // Only pixels inside the image count (scipy's border_value=1): a class touching the border is
                // not eaten away from outside.
                result[index] = false
            }
        }
        return result
    }

    /// Morphological opening of every class (erosion then dilation of its mask, `radius` times each, with
    /// the connectivity's structuring element): pixels an opening removes from their class are reassigned to
    /// the most frequent label among their kept neighbours, spreading inwards until every pixel has a label.
    /// Classes are processed in increasing label order. Removes specks and thin spurs.
    public static func opening(_ map: LabelGrid<Int32>, radius: Int = 1, connectivity: Int = 1) throws -> LabelGrid<
        Int32
    > {
        try validate(map, connectivity: connectivity)
        let shape = map.shape
        var released = [Bool](repeating: false, count: shape.count)
        for label in 0..<map.labelBound {
            var mask = map.labels.map { $0 == Int32(label) }
            let original = mask
            for _ in 0..<radius { mask = morph(mask, shape: shape, connectivity: connectivity, dilate: false) }
            for _ in 0..<radius { mask = morph(mask, shape: shape, connectivity: connectivity, dilate: true) }
            for index in 0..<shape.count where original[index] && !mask[index] { released[index] = true }
        }
        return fill(map, released: released, connectivity: connectivity)
    }

    /// Morphological closing of the `classes` listed (default: every class but the most frequent one, taken
    /// as the background), in increasing label order: dilation then erosion of the class's mask, and the
    /// pixels the closing adds join the class. Fills gaps and holes narrower than the structuring element.
    /// Closing the background too would let it swallow every thin foreground structure, so it is opt-in.
    public static func closing(
        _ map: LabelGrid<Int32>, radius: Int = 1, connectivity: Int = 1,
        classes: [Int32]? = nil
    ) throws -> LabelGrid<Int32> {
        try validate(map, connectivity: connectivity)
        let shape = map.shape
        var counts = [Int](repeating: 0, count: map.labelBound)
        for label in map.labels { counts[Int(label)] += 1 }
        let background = counts.indices.max { (counts[$0], -$0) < (counts[$1], -$1) } ?? 0
        let chosen = (classes ?? (0..<Int32(map.labelBound)).filter { $0 != Int32(background) }).sorted()
        var result = map
        for label in chosen {
            var mask = result.labels.map { $0 == label }
            for _ in 0..<radius { mask = morph(mask, shape: shape, connectivity: connectivity, dilate: true) }
            for _ in 0..<radius { mask = morph(mask, shape: shape, connectivity: connectivity, dilate: false) }
            for index in 0..<shape.count where mask[index] { result.labels[index] = label }
        }
        return result
    }

    /// Gives every released pixel the most frequent label among its labelled neighbours, layer by layer.
    static func fill(_ map: LabelGrid<Int32>, released: [Bool], connectivity: Int) -> LabelGrid<Int32> {
        var result = map
        var pending = released
        var remaining = pending.filter { $0 }.count
        guard remaining < map.shape.count else { return map }  // everything released: keep the input
        var votes = [Int](repeating: 0, count: map.labelBound)
        while remaining > 0 {
            var assignments: [(Int, Int32)] = []
            forEachPixel(map.shape, connectivity: connectivity) { index, neighbours in
                guard pending[index] else { return }
                var best = -1
                for neighbour in neighbours where !pending[neighbour] {
                    let label = Int(result.labels[neighbour])
                    votes[label] += 1
                    if best < 0 || votes[label] > votes[best] || (votes[label] == votes[best] && label < best) {
                        best = label
                    }
                }
                for neighbour in neighbours where !pending[neighbour] { votes[Int(result.labels[neighbour])] = 0 }
                if best >= 0 { assignments.append((index, Int32(best))) }
            }
            if assignments.isEmpty { break }
            for (index, label) in assignments {
                result.labels[index] = label
                pending[index] = false
            }
            remaining -= assignments.count
        }
        return result
    }

    // MARK: - Potts MRF

    /// Potts-model smoothing by iterated conditional modes (Besag 1986): each pixel in raster order takes the
    /// label minimising `dataCost(pixel, label) + β × (number of neighbours with another label)`, sweeping
    /// until no label changes or `maxSweeps`.
    ///
    /// - Parameters:
    ///   - dataCost: `n × K` row-major costs (for example −log posterior or ‖x − μ_k‖² / 2σ²); nil uses
    ///     the map's own labels as evidence (cost 0 for the pixel's label, 1 for any other), which lets ICM
    ///     smooth a label map with no features, such as a network's output.
    ///   - classCount: K (at least the map's label bound).
    /// - Returns: the smoothed map and the number of sweeps run.
    public static func pottsICM(
        _ map: LabelGrid<Int32>, classCount: Int, beta: Double, dataCost: [Double]? = nil,
        connectivity: Int = 1, maxSweeps: Int = 20
    ) throws -> (map: LabelGrid<Int32>, sweeps: Int) {
        if let dataCost {
            guard dataCost.count == map.shape.count * classCount else {
                throw ClassicalError.shapeMismatch(
                    "data cost has \(dataCost.count) entries, not \(map.shape.count)x\(classCount)")
            }
            if let bad = dataCost.firstIndex(where: { $0.isNaN }) {
                throw ClassicalError.nonFiniteValue(index: bad / classCount)
            }
            return try pottsICM(
                map, classCount: classCount, beta: beta, connectivity: connectivity,
                maxSweeps: maxSweeps, cost: { dataCost[$0 * classCount + $1] })
        }
        return try pottsICM(
            map, classCount: classCount, beta: beta, connectivity: connectivity, maxSweeps: maxSweeps,
            cost: nil)
    }

    /// Potts ICM with the data cost computed on demand, `cost(pixel, label)` (no n × K table: volumes).
    public static func pottsICM(
        _ map: LabelGrid<Int32>, classCount: Int, beta: Double, connectivity: Int = 1,
        maxSweeps: Int = 20,
        cost dataCost: ((Int, Int) -> Double)?
    ) throws -> (map: LabelGrid<Int32>, sweeps: Int) {
        try validate(map, connectivity: connectivity)
        guard classCount >= map.labelBound, beta >= 0, beta.isFinite else {
            throw ClassicalError.invalidArgument(
                "Potts smoothing needs classCount ≥ \(map.labelBound) and a finite β ≥ 0 (got \(classCount), \(beta))")
        }
        let evidence = map.labels
        var result = map
        var disagreeing = [Int](repeating: 0, count: classCount)
        var sweeps = 0
        while sweeps < maxSweeps {
            sweeps += 1
            var changed = false
            forEachPixel(map.shape, connectivity: connectivity) { index, neighbours in
                for label in 0..<classCount { disagreeing[label] = neighbours.count }
                for neighbour in neighbours { disagreeing[Int(result.labels[neighbour])] -= 1 }
                let current = Int(result.labels[index])
                func energy(_ label: Int) -> Double {
                    let data = dataCost.map { $0(index, label) } ?? (Int32(label) == evidence[index] ? 0 : 1)
                    return data + beta * Double(disagreeing[label])
                }
                var best = current
                var bestEnergy = energy(current)
                for label in 0..<classCount where label != current {
                    let value = energy(label)
                    if value < bestEnergy { (best, bestEnergy) = (label, value) }
                }
                if best != current {
                    result.labels[index] = Int32(best)
                    changed = true
                }
            }
            if !changed { break }
        }
        return (result, sweeps)
    }
}
