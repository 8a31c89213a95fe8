/// Histogram thresholding: Otsu's method and its multi-class extension, as scikit-image computes them.
public enum Thresholding {
    /// Otsu's threshold, as `skimage.filters.threshold_otsu`: pixels `> threshold` are the upper class.
    ///
    /// Arithmetic follows skimage's dtypes (float32 class weights, float64 means) so the chosen bin is the
    /// same. A constant image returns its value.
    /// - Throws: `ClassicalError.emptyInput`, `.nonFiniteValue`.
    public static func otsu(_ values: Intensities, binCount: Int = 256) throws -> Double {
        let histogram = try Histogram(values, binCount: binCount)
        // One occupied bin only happens for a constant image (min and max fall in the first and last bins).
        if histogram.occupiedBinCount == 1, let value = values.first { return value }
        return otsu(histogram)
    }

    /// Otsu's threshold of a histogram (the bin centre maximising the between-class variance).
    public static func otsu(_ histogram: Histogram) -> Double {
        let counts = histogram.counts.map(Float.init)
        let centers = histogram.binCenters
        let bins = counts.count
        guard bins > 1 else { return centers[0] }
        var weightBelow = [Float](repeating: 0, count: bins)
        var weightAbove = weightBelow
        var meanBelow = [Double](repeating: 0, count: bins)
        var meanAbove = meanBelow
        var (runningWeight, runningMoment): (Float, Double) = (0, 0)
        for index in 0..<bins {
            runningWeight += counts[index]
            runningMoment += Double(counts[index]) * centers[index]
            weightBelow[index] = runningWeight
            meanBelow[index] = runningMoment / Double(runningWeight)
        }
        (runningWeight, runningMoment) = (0, 0)
        for index in stride(from: bins - 1, through: 0, by: -1) {
            runningWeight += counts[index]
            runningMoment += Double(counts[index]) * centers[index]
            weightAbove[index] = runningWeight
            meanAbove[index] = runningMoment / Double(runningWeight)
        }
        var (best, bestVariance) = (0, -Double.infinity)
        for index in 0..<(bins - 1) {
            let difference = meanBelow[index] - meanAbove[index + 1]
            let variance = Double(weightBelow[index] * weightAbove[index + 1]) * (difference * difference)
            if variance > bestVariance || (bestVariance.isNaN && !variance.isNaN) {
                (best, bestVariance) = (index, variance)
            }
        }
        return centers[best]
    }

    /// The largest exhaustive search run before switching to the exact dynamic-programming search.
    public static let exhaustiveSearchLimit = 2_000_000_000.0

    /// Multi-Otsu thresholds for `classes` classes, as `skimage.filters.threshold_multiotsu` (nbins=256):
    /// the histogram has one bin per integer value for integer images and 256 bins for real ones, the
    /// returned thresholds are bin centres, ascending, `classes - 1` of them.
    ///
    /// The search is skimage's: float32 probabilities and between-class terms, every combination of
    /// thresholds in lexicographic order, the first maximum kept; with exactly `classes` occupied bins the
    /// thresholds are the first `classes - 1` of them. When the exhaustive search would visit more than
    /// `exhaustiveSearchLimit` combinations (wide 16-bit ranges with K ≥ 4, where skimage would run for
    /// hours) the exact maximiser is found by dynamic programming in float64 instead; it maximises the same
    /// objective and can only differ from skimage on float32 ties.
    /// - Throws: `ClassicalError.tooFewDistinctValues` when fewer than `classes` bins are occupied (as
    ///   skimage's `ValueError`), `.invalidArgument` for `classes < 2`, and the histogram's errors.
    public static func multiOtsu(_ values: Intensities, classes: Int, binCount: Int = 256) throws -> [Double] {
        try multiOtsu(Histogram(values, binCount: binCount), classes: classes)
    }

    /// Multi-Otsu thresholds of a histogram; see `multiOtsu(_:classes:binCount:)`.
    public static func multiOtsu(_ histogram: Histogram, classes: Int) throws -> [Double] {
        guard classes >= 2 else { throw ClassicalError.invalidArgument("multi-Otsu needs at least 2 classes") }
        let total = Double(histogram.counts.reduce(0, +))
        let probabilities = histogram.counts.map { Float(Double($0) / total) }
        let occupied = probabilities.indices.filter { probabilities[$0] != 0 }
        if occupied.count < classes {
            throw ClassicalError.tooFewDistinctValues(classes: classes, distinct: occupied.count)
        }
        let indices: [Int]
        if occupied.count == classes {
            indices = Array(occupied.dropLast())
        } else if combinationCount(bins: probabilities.count, thresholds: classes - 1) <= exhaustiveSearchLimit {
            indices = exhaustiveIndices(probabilities, thresholdCount: classes - 1)
        } else {
            indices = dynamicProgrammingIndices(probabilities, thresholdCount: classes - 1)
        }
        return indices.map { histogram.binCenters[$0] }
    }

    /// Class indices 0..<thresholds.count+1 for each value: `numpy.digitize(values, thresholds)`, so a value
    /// equal to a threshold joins the class above it (skimage's multi-Otsu convention).
    public static func digitize(_ values: [Double], thresholds: [Double]) -> [Int32] {
        values.map { value in
            var classIndex: Int32 = 0
            for threshold in thresholds where value >= threshold { classIndex += 1 }
            return classIndex
        }
    }

    // MARK: - Searches

    static func combinationCount(bins: Int, thresholds: Int) -> Double {
        var count = 1.0
        for step in 0..<thresholds { count = count * Double(bins - 1 - step) / Double(step + 1) }
        return count
    }

    /// skimage's `_set_var_btwcls_lut`: the between-class term S²/P of every bin interval [i, j] in float32,
    /// including its quirks (the term of [0, 0] is 0; the first moment starts at prob[0]).
    struct BetweenClassTable {
        /// Above this many bins the table (n(n+1)/2 floats: 32 MB at 4096) is not built.
        static let maximumBins = 4096
        let bins: Int
        var terms: [Float]
        init(_ probabilities: [Float]) {
            bins = probabilities.count
            terms = [Float](repeating: 0, count: bins * (bins + 1) / 2)
            var zeroth = [Float](repeating: 0, count: bins)
            var first = zeroth
            zeroth[0] = probabilities[0]
            first[0] = probabilities[0]
            for i in 1..<max(bins, 1) {
                zeroth[i] = zeroth[i - 1] + probabilities[i]
                first[i] = first[i - 1] + Float(i) * probabilities[i]
                if zeroth[i] > 0 { terms[i] = (first[i] * first[i]) / zeroth[i] }
            }
            var position = bins
            for i in 1..<max(bins, 1) {
                for j in i..<bins {
                    let zerothIJ = zeroth[j] - zeroth[i - 1]
                    if zerothIJ > 0 {
                        let firstIJ = first[j] - first[i - 1]
                        terms[position] = (firstIJ * firstIJ) / zerothIJ
                    }
                    position += 1
                }
            }
        }
    }

    /// skimage's `_set_thresh_indices_lut`: every ascending combination in lexicographic order, the first
    /// maximum kept, sigma summed in skimage's order ((first + last) + the middle classes in turn) in float32.
    static func exhaustiveIndices(_ probabilities: [Float], thresholdCount: Int) -> [Int] {
        guard probabilities.count <= BetweenClassTable.maximumBins else {
            return exhaustiveIndicesWithoutTable(probabilities, thresholdCount: thresholdCount)
        }
        let table = BetweenClassTable(probabilities)
        let bins = probabilities.count
        return table.terms.withUnsafeBufferPointer { terms in
            // Row i of the packed upper triangle starts at offset(i) - i, so term(i, j) = terms[row(i) + j].
            let rowStart = (0..<bins).map { ($0 * (2 * bins - $0 + 1)) / 2 - $0 }
            let last = bins - 1
            var best = Array(0..<thresholdCount)
            var bestSigma: Float = 0
            switch thresholdCount {
            case 1:
                for a in 0..<(bins - 1) {
                    let sigma = terms[a] + terms[rowStart[a + 1] + last]
                    if sigma > bestSigma { (bestSigma, best) = (sigma, [a]) }
                }
            case 2:
                for a in 0..<(bins - 2) {
                    let first = terms[a]
                    let rowB = rowStart[a + 1]
                    for b in (a + 1)..<(bins - 1) {
                        let sigma = (first + terms[rowStart[b + 1] + last]) + terms[rowB + b]
                        if sigma > bestSigma { (bestSigma, best) = (sigma, [a, b]) }
                    }
                }
            case 3:
                for a in 0..<(bins - 3) {
                    let first = terms[a]
                    let rowB = rowStart[a + 1]
                    for b in (a + 1)..<(bins - 2) {
                        let second = terms[rowB + b]
                        let rowC = rowStart[b + 1]
                        for c in (b + 1)..<(bins - 1) {
                            let sigma = ((first + terms[rowStart[c + 1] + last]) + second) + terms[rowC + c]
                            if sigma > bestSigma { (bestSigma, best) = (sigma, [a, b, c]) }
                        }
                    }
                }
            case 4:
                for a in 0..<(bins - 4) {
                    let first = terms[a]
                    let rowB = rowStart[a + 1]
                    for b in (a + 1)..<(bins - 3) {
                        let second = terms[rowB + b]
                        let rowC = rowStart[b + 1]
                        for c in (b + 1)..<(bins - 2) {
                            let third = terms[rowC + c]
                            let rowD = rowStart[c + 1]
                            for d in (c + 1)..<(bins - 1) {
                                let sigma =
                                    (((first + terms[rowStart[d + 1] + last]) + second) + third)
                                    + terms[rowD + d]
                                if sigma > bestSigma { (bestSigma, best) = (sigma, [a, b, c, d]) }
                            }
                        }
                    }
                }
            default:
                best = odometerSearch(bins: bins, thresholdCount: thresholdCount) { terms[rowStart[$0] + $1] }
            }
            return best
        }
    }

    /// The same search for histograms too wide for the n(n+1)/2 table (16-bit ranges): each between-class term
    /// is computed from the float32 cumulative moments exactly as the table would hold it.
    static func exhaustiveIndicesWithoutTable(_ probabilities: [Float], thresholdCount: Int) -> [Int] {
        let bins = probabilities.count
        var zeroth = [Float](repeating: 0, count: bins)
        var first = zeroth
        zeroth[0] = probabilities[0]
        first[0] = probabilities[0]
        for i in 1..<bins {
            zeroth[i] = zeroth[i - 1] + probabilities[i]
            first[i] = first[i - 1] + Float(i) * probabilities[i]
        }
        func term(_ i: Int, _ j: Int) -> Float {
            if i == 0 {
                guard j > 0, zeroth[j] > 0 else { return 0 }
                return (first[j] * first[j]) / zeroth[j]
            }
            let zerothIJ = zeroth[j] - zeroth[i - 1]
            guard zerothIJ > 0 else { return 0 }
            let firstIJ = first[j] - first[i - 1]
            return (firstIJ * firstIJ) / zerothIJ
        }
        return odometerSearch(bins: bins, thresholdCount: thresholdCount, term: term)
    }

    /// Every ascending combination of `thresholdCount` bins in lexicographic order (position p runs up to
    /// bins − thresholdCount + p − 1), sigma summed in skimage's order in float32, the first maximum kept.
    static func odometerSearch(bins: Int, thresholdCount: Int, term: (Int, Int) -> Float) -> [Int] {
        var current = Array(0..<thresholdCount)
        var best = current
        var bestSigma: Float = 0
        while true {
            var sigma = term(0, current[0]) + term(current[thresholdCount - 1] + 1, bins - 1)
            for index in 0..<(thresholdCount - 1) { sigma += term(current[index] + 1, current[index + 1]) }
            if sigma > bestSigma { (bestSigma, best) = (sigma, current) }
            var position = thresholdCount - 1
            while position >= 0, current[position] == bins - thresholdCount + position - 1 { position -= 1 }
            if position < 0 { break }
            current[position] += 1
            for later in (position + 1)..<thresholdCount { current[later] = current[later - 1] + 1 }
        }
        return best
    }

    /// The exact maximiser of Σ S²/P over classes by dynamic programming in float64 (O(K·n²)).
    static func dynamicProgrammingIndices(_ probabilities: [Float], thresholdCount: Int) -> [Int] {
        let bins = probabilities.count
        var zeroth = [Double](repeating: 0, count: bins + 1)
        var first = zeroth
        for i in 0..<bins {
            zeroth[i + 1] = zeroth[i] + Double(probabilities[i])
            first[i + 1] = first[i] + Double(i) * Double(probabilities[i])
        }
        func term(_ i: Int, _ j: Int) -> Double {  // bins i...j
            let weight = zeroth[j + 1] - zeroth[i]
            guard weight > 0 else { return 0 }
            let moment = first[j + 1] - first[i]
            return moment * moment / weight
        }
        // best[c][j]: best sum for bins 0...j split into c+1 classes; choice[c][j]: last threshold.
        var best = [[Double]](repeating: [Double](repeating: -.infinity, count: bins), count: thresholdCount + 1)
        var choice = [[Int]](repeating: [Int](repeating: 0, count: bins), count: thresholdCount + 1)
        for j in 0..<bins { best[0][j] = term(0, j) }
        for c in 1...thresholdCount {
            for j in c..<bins {
                for t in (c - 1)..<j where best[c - 1][t] > -.infinity {
                    let value = best[c - 1][t] + term(t + 1, j)
                    if value > best[c][j] { (best[c][j], choice[c][j]) = (value, t) }
                }
            }
        }
        var indices = [Int](repeating: 0, count: thresholdCount)
        var end = bins - 1
        for c in stride(from: thresholdCount, through: 1, by: -1) {
            indices[c - 1] = choice[c][end]
            end = indices[c - 1]
        }
        return indices
    }
}
