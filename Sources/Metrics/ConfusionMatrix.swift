import SliceLabSupport

/// The confusion matrix of one case: `counts[reference * classCount + prediction]` voxels.
///
/// Rows are the reference class, columns the predicted class (scikit-learn's `confusion_matrix` layout).
public struct ConfusionMatrix: Sendable, Equatable {
    /// The largest class count accepted (the matrix holds classCount² counts per case).
    public static let maximumClassCount = 1024

    public let classCount: Int
    /// Row-major `[classCount, classCount]` counts.
    public let counts: [Int64]

    /// Wraps counts already tallied; `counts.count` must be `classCount²`.
    public init(classCount: Int, counts: [Int64]) throws {
        guard classCount >= 1, counts.count == classCount * classCount else {
            throw MetricsError.invalidArgument(
                "a confusion matrix of \(classCount) classes needs \(classCount * classCount) counts, got \(counts.count)"
            )
        }
        (self.classCount, self.counts) = (classCount, counts)
    }

    /// Tallies two label maps of the same shape.
    ///
    /// - Throws: `MetricsError.shapeMismatch`, `.labelOutOfRange` (naming the first offending label and
    ///   whether it is in the reference or the prediction), `.invalidArgument` for a class count out of
    ///   1...`maximumClassCount`.
    public init(reference: LabelGrid<UInt16>, prediction: LabelGrid<UInt16>, classCount: Int) throws {
        guard reference.shape == prediction.shape else {
            throw MetricsError.shapeMismatch(
                reference: reference.shape.dimensions, prediction: prediction.shape.dimensions)
        }
        try self.init(reference: reference.labels, prediction: prediction.labels, classCount: classCount)
    }

    /// Tallies two label arrays of equal length (multi-threaded over chunks unless `workers` is 1).
    public init(reference: [UInt16], prediction: [UInt16], classCount: Int, workers: Int? = nil) throws {
        guard (1...Self.maximumClassCount).contains(classCount) else {
            throw MetricsError.invalidArgument(
                "class count \(classCount) outside 1...\(Self.maximumClassCount) for a confusion matrix")
        }
        guard reference.count == prediction.count else {
            throw MetricsError.shapeMismatch(reference: [reference.count], prediction: [prediction.count])
        }
        let count = reference.count
        let chunkCount = Swift.max(1, Swift.min(workers ?? Parallel.processorCount, count / (1 << 18)))
        let chunk = (count + chunkCount - 1) / Swift.max(chunkCount, 1)
        let k = classCount
        var partial = [[Int64]](repeating: [], count: chunkCount)
        var outOfRange = [(Int, String)?](repeating: nil, count: chunkCount)
        reference.withUnsafeBufferPointer { r in
            prediction.withUnsafeBufferPointer { p in
                partial.withUnsafeMutableBufferPointer { partialResults in
                    outOfRange.withUnsafeMutableBufferPointer { bad in
                        let results = partialResults
                        let badResults = bad
                        Parallel.forEach(chunkCount) { index in
                            var local = [Int64](repeating: 0, count: k * k)
                            let start = index * chunk
                            let end = Swift.min(count, start + chunk)
                            var maxR: UInt16 = 0
                            var maxP: UInt16 = 0
                            local.withUnsafeMutableBufferPointer { tally in
                                if start < end {
                                    for i in start..<end {
                                        let a = r[i]
                                        let b = p[i]
                                        maxR = Swift.max(maxR, a)
                                        maxP = Swift.max(maxP, b)
                                        if Int(a) < k && Int(b) < k { tally[Int(a) &* k &+ Int(b)] &+= 1 }
                                    }
                                }
                            }
                            if Int(maxR) >= k {
                                badResults[index] = (Int(maxR), "reference")
                            } else if Int(maxP) >= k {
                                badResults[index] = (Int(maxP), "prediction")
                            }
                            results[index] = local
                        }
                    }
                }
            }
        }
        if let (label, role) = outOfRange.compactMap({ $0 }).max(by: { $0.0 < $1.0 }) {
            throw MetricsError.labelOutOfRange(label: label, classCount: classCount, role: role)
        }
        var total = [Int64](repeating: 0, count: k * k)
        for local in partial { for i in 0..<(k * k) { total[i] += local[i] } }
        (self.classCount, self.counts) = (classCount, total)
    }

    /// All voxels.
    public var total: Int64 { counts.reduce(0, +) }

    /// Voxels of class `c` in both.
    public func truePositives(_ c: Int) -> Int64 { counts[c * classCount + c] }

    /// Voxels predicted `c` whose reference is another class (column sum minus the diagonal).
    public func falsePositives(_ c: Int) -> Int64 {
        var sum: Int64 = 0
        for r in 0..<classCount where r != c { sum += counts[r * classCount + c] }
        return sum
    }

    /// Voxels of reference class `c` predicted as another class (row sum minus the diagonal).
    public func falseNegatives(_ c: Int) -> Int64 {
        var sum: Int64 = 0
        for p in 0..<classCount where p != c { sum += counts[c * classCount + p] }
        return sum
    }

    /// Voxels that are `c` in neither.
    public func trueNegatives(_ c: Int) -> Int64 {
        total - truePositives(c) - falsePositives(c) - falseNegatives(c)
    }
}

extension ConfusionMatrix {
    /// One confusion matrix per item of a batch (slices of a stack, cases of equal size), items in parallel.
    ///
    /// - Parameters:
    ///   - itemSize: voxels per item; both arrays hold a whole number of items.
    /// - Throws: as `init(reference:prediction:classCount:)`, for the first failing item.
    public static func batch(
        reference: [UInt16], prediction: [UInt16], itemSize: Int,
        classCount: Int
    ) throws -> [ConfusionMatrix] {
        guard itemSize > 0, reference.count == prediction.count, reference.count % itemSize == 0 else {
            throw MetricsError.shapeMismatch(reference: [reference.count], prediction: [prediction.count])
        }
        let items = reference.count / itemSize
        var results = [Result<ConfusionMatrix, Error>](
            repeating: .failure(MetricsError.invalidArgument("not run")),
            count: items)
        results.withUnsafeMutableBufferPointer { slots in
            let output = slots
            Parallel.forEach(items) { item in
                let range = (item * itemSize)..<((item + 1) * itemSize)
                output[item] = Result {
                    try ConfusionMatrix(
                        reference: Array(reference[range]), prediction: Array(prediction[range]),
                        classCount: classCount, workers: 1)
                }
            }
        }
        return try results.map { try $0.get() }
    }
}
