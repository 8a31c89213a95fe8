import Foundation

/// Classes from the modes of a smoothed histogram: valleys between modes in 1-D, peaks in 2-D/3-D color
/// histograms (each peak a class centre).
public enum HistogramModes {
    /// Gaussian smoothing along one axis of a dense N-D array (`extents` per axis, row-major, last axis
    /// fastest), kernel truncated at 4σ, edges reflected as `scipy.ndimage.gaussian_filter`'s 'reflect'.
    static func smooth(_ values: [Double], extents: [Int], sigma: Double) -> [Double] {
        guard sigma > 0 else { return values }
        let radius = max(1, Int((4 * sigma).rounded()))
        var kernel = (-radius...radius).map { exp(-0.5 * Double($0 * $0) / (sigma * sigma)) }
        let total = kernel.reduce(0, +)
        kernel = kernel.map { $0 / total }
        var current = values
        var step = 1
        for axis in stride(from: extents.count - 1, through: 0, by: -1) {
            let length = extents[axis]
            var next = current
            for base in 0..<current.count where (base / step) % length == 0 {
                for position in 0..<length {
                    var sum = 0.0
                    for (offset, weight) in zip(-radius...radius, kernel) {
                        var source = position + offset
                        // 'reflect' (d c b a | a b c d | d c b a), repeated for kernels wider than the axis.
                        while source < 0 || source >= length {
                            source = source < 0 ? -source - 1 : 2 * length - source - 1
                        }
                        sum += weight * current[base + source * step]
                    }
                    next[base + position * step] = sum
                }
            }
            current = next
            step *= length
        }
        return current
    }

    /// Indices of the local maxima of a 1-D profile (plateaus reported once, at their first bin), with
    /// each maximum's height.
    static func localMaxima(_ profile: [Double]) -> [Int] {
        var maxima: [Int] = []
        var index = 0
        while index < profile.count {
            var end = index
            while end + 1 < profile.count, profile[end + 1] == profile[index] { end += 1 }
            let leftLower = index == 0 || profile[index - 1] < profile[index]
            let rightLower = end == profile.count - 1 || profile[end + 1] < profile[index]
            if leftLower, rightLower, profile[index] > 0 { maxima.append(index) }
            index = end + 1
        }
        return maxima
    }

    /// Thresholds between the `classes` modes of the histogram of `values` (256 equal bins over [min, max]).
    ///
    /// The histogram is smoothed with a Gaussian of σ = 1 bin, widened by 1.5× until it has at most `classes`
    /// local maxima; the `classes` highest maxima of the last smoothing that still had at least that many are
    /// the modes, and each threshold is the centre of the lowest bin between two consecutive modes.
    /// - Returns: `classes − 1` ascending thresholds (classify with `Thresholding.digitize`).
    /// - Throws: `ClassicalError.tooFewDistinctValues` when even the least smoothed histogram has fewer than
    ///   `classes` modes; the histogram's errors.
    public static func valleyThresholds(_ values: [Double], classes: Int, binCount: Int = 256) throws -> [Double] {
        guard classes >= 2 else { throw ClassicalError.invalidArgument("histogram modes need at least 2 classes") }
        let histogram = try Histogram(.real(values), binCount: binCount)
        let counts = histogram.counts.map(Double.init)
        var sigma = 1.0
        var chosen: (profile: [Double], maxima: [Int])?
        var smoothed = smooth(counts, extents: [counts.count], sigma: sigma)
        var maxima = localMaxima(smoothed)
        while maxima.count >= classes {
            chosen = (smoothed, maxima)
            if maxima.count == classes || sigma > Double(binCount) { break }
            sigma *= 1.5
            smoothed = smooth(counts, extents: [counts.count], sigma: sigma)
            maxima = localMaxima(smoothed)
        }
        guard let (profile, found) = chosen else {
            throw ClassicalError.tooFewDistinctValues(classes: classes, distinct: maxima.count)
        }
        let modes = found.sorted { (profile[$0], -$0) > (profile[$1], -$1) }.prefix(classes).sorted()
        return (0..<(classes - 1)).map { index in
            let (from, to) = (modes[index], modes[index + 1])
            var valley = from + 1
            for bin in (from + 1)..<to where profile[bin] < profile[valley] { valley = bin }
            return histogram.binCenters[min(valley, to)]
        }
    }

    /// Class centres at the `classes` highest peaks of the smoothed 2-D or 3-D histogram of `points`
    /// (`binsPerAxis` equal bins per channel over its [min, max]; Gaussian σ = 1 bin; a peak is a bin higher
    /// than every neighbour in its 3^D window, ties broken towards the earlier bin).
    /// - Returns: `classes × D` centres (bin centres in the points' space), highest peak first.
    /// - Throws: `ClassicalError.invalidArgument` for a dimension other than 2 or 3,
    ///   `.tooFewDistinctValues` when the histogram has fewer than `classes` peaks; the points' errors.
    public static func colorPeaks(_ points: FeatureMatrix, classes: Int, binsPerAxis: Int = 32) throws -> FeatureMatrix
    {
        try points.validate("the image")
        let dimension = points.dimension
        guard dimension == 2 || dimension == 3 else {
            throw ClassicalError.invalidArgument("color-histogram peaks need 2 or 3 channels, not \(dimension)")
        }
        guard classes >= 1, binsPerAxis >= 2 else {
            throw ClassicalError.invalidArgument("color-histogram peaks need classes ≥ 1 and ≥ 2 bins per axis")
        }
        var low = [Double](repeating: .infinity, count: dimension)
        var high = [Double](repeating: -.infinity, count: dimension)
        for index in 0..<points.count {
            for channel in 0..<dimension {
                low[channel] = min(low[channel], points.values[index * dimension + channel])
                high[channel] = max(high[channel], points.values[index * dimension + channel])
            }
        }
        let width = (0..<dimension).map { high[$0] > low[$0] ? (high[$0] - low[$0]) / Double(binsPerAxis) : 1 }
        let extents = [Int](repeating: binsPerAxis, count: dimension)
        var counts = [Double](repeating: 0, count: Int(pow(Double(binsPerAxis), Double(dimension))))
        for index in 0..<points.count {
            var bin = 0
            for channel in 0..<dimension {
                let position = Int((points.values[index * dimension + channel] - low[channel]) / width[channel])
                bin = bin * binsPerAxis + min(max(position, 0), binsPerAxis - 1)
            }
            counts[bin] += 1
        }
        let smoothed = smooth(counts, extents: extents, sigma: 1)
        var peaks: [Int] = []
        for bin in 0..<smoothed.count where smoothed[bin] > 0 {
            var coordinates = [Int](repeating: 0, count: dimension)
            var rest = bin
            for axis in stride(from: dimension - 1, through: 0, by: -1) {
                coordinates[axis] = rest % binsPerAxis
                rest /= binsPerAxis
            }
            var isPeak = true
            var offsets = [Int](repeating: -1, count: dimension)
            outer: while true {
                if offsets.contains(where: { $0 != 0 }) {
                    var neighbour = 0
                    var inside = true
                    for axis in 0..<dimension {
                        let value = coordinates[axis] + offsets[axis]
                        if value < 0 || value >= binsPerAxis {
                            inside = false
                            break
                        }
                        neighbour = neighbour * binsPerAxis + value
                    }
                    if inside,
                        smoothed[neighbour] > smoothed[bin] || (smoothed[neighbour] == smoothed[bin] && neighbour < bin)
                    {
                        isPeak = false
                        break outer
                    }
                }
                var axis = dimension - 1
                while axis >= 0, offsets[axis] == 1 {
                    offsets[axis] = -1
                    axis -= 1
                }
                if axis < 0 { break }
                offsets[axis] += 1
            }
            if isPeak { peaks.append(bin) }
        }
        guard peaks.count >= classes else {
            throw ClassicalError.tooFewDistinctValues(classes: classes, distinct: peaks.count)
        }
        let top = peaks.sorted { (smoothed[$0], -$0) > (smoothed[$1], -$1) }.prefix(classes)
        var centers: [Double] = []
        for bin in top {
            var rest = bin
            var coordinates = [Int](repeating: 0, count: dimension)
            for axis in stride(from: dimension - 1, through: 0, by: -1) {
                coordinates[axis] = rest % binsPerAxis
                rest /= binsPerAxis
            }
            centers += (0..<dimension).map { low[$0] + (Double(coordinates[$0]) + 0.5) * width[$0] }
        }
        return FeatureMatrix(count: classes, dimension: dimension, values: centers)
    }
}
