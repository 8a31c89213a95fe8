import DeepLab
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabSupport

/// Test-time augmentation: the views a model sees of each slice, whose softmax outputs are averaged in the slice's
/// own frame (nnU-Net's mirroring; MONAI's test-time augmentation).
public enum TestTimeAugmentation: String, CaseIterable, Codable, Sendable {
    /// The slice as it is.
    case none
    /// Every combination of flips along the in-plane axes the checkpoint was trained to flip (nnU-Net's allowed
    /// mirroring axes): 4 views when both were, 2 when one was.
    case mirror
    /// `mirror` at the scales 0.9, 1 and 1.1 (the slice resampled bilinearly before the model and its logits
    /// back after).
    case mirrorScale = "mirror+scale"

    /// The scales of `mirror+scale`.
    public static let scales = [1.0, 0.9, 1.1]

    /// One view: flips of rows (up–down) and columns (left–right), and a scale.
    public struct View: Equatable, Sendable {
        public var flipRows: Bool
        public var flipColumns: Bool
        public var scale: Double
    }

    /// The views, identity first, over the mirroring axes allowed.
    public func views(rows allowRows: Bool, columns allowColumns: Bool) -> [View] {
        guard self != .none else { return [View(flipRows: false, flipColumns: false, scale: 1)] }
        let rowFlips = allowRows ? [false, true] : [false]
        let columnFlips = allowColumns ? [false, true] : [false]
        let scales = self == .mirrorScale ? Self.scales : [1]
        return scales.flatMap { scale in
            rowFlips.flatMap { r in columnFlips.map { View(flipRows: r, flipColumns: $0, scale: scale) } }
        }
    }
}

/// The in-plane axes an ensemble may be mirrored along: whether every member's training flipped it, and the
/// members whose training did not.
struct MirrorAxes: Sendable {
    var rows: (trained: Bool, untrained: [String]) = (true, [])
    var columns: (trained: Bool, untrained: [String]) = (true, [])

    /// Takes in a member: an axis its training never flipped is no longer mirrored (a member that does not record
    /// its training changes nothing).
    mutating func add(_ member: EnsembleMember) {
        guard let flips = member.flips else { return }
        if flips.rows == 0 { rows = (false, rows.untrained + [member.path]) }
        if flips.columns == 0 { columns = (false, columns.untrained + [member.path]) }
    }
}

/// One checkpoint of an ensemble, with what averaging it with others must check.
struct EnsembleMember {
    let path: String
    let segmenter: VolumeSegmenter
    let classNames: [String]?
    /// The training's flip probabilities (rows, columns), when the checkpoint records its training.
    let flips: (rows: Double, columns: Double)?

    static func load(
        _ path: String, context: Int?, tileSize: Int?, tileStep: Double, limits: ReadLimits, precision: Precision?
    ) throws -> EnsembleMember {
        let segmenter = try VolumeSegmenter.load(
            checkpoint: path, context: context, tileSize: tileSize, tileStep: tileStep, limits: limits,
            precision: precision)
        let file = try HDF5File.open(path)
        var classNames: [String]?
        if file.hasAttribute("class_names"), case .strings(let names) = try file.attribute("class_names") {
            classNames = names
        }
        var flips: (Double, Double)?
        if let augmentation = try VolumeSegmenter.trainingAugmentation(file) {
            flips = (
                (augmentation["verticalFlipProbability"] as? Double) ?? 0,
                (augmentation["horizontalFlipProbability"] as? Double) ?? 0
            )
        }
        return EnsembleMember(path: path, segmenter: segmenter, classNames: classNames, flips: flips)
    }

    /// What differs between this member and `first` that averaging cannot bridge, or nil.
    func difference(from first: EnsembleMember) -> String? {
        let (a, b) = (first.segmenter, segmenter)
        if a.classCount != b.classCount { return "\(a.classCount) classes against \(b.classCount)" }
        if let names = first.classNames, let other = classNames, names != other {
            return "classes \(names) against \(other)"
        }
        if a.model.configuration.inputChannels != b.model.configuration.inputChannels {
            return "\(a.model.configuration.inputChannels) input channels against "
                + "\(b.model.configuration.inputChannels)"
        }
        if a.preprocessing != b.preprocessing { return "preprocessing \(a.preprocessing) against \(b.preprocessing)" }
        if a.sampling.context != b.sampling.context {
            return "2.5-D context \(a.sampling.context) against \(b.sampling.context)"
        }
        return nil
    }
}

extension VolumeSegmenter {
    /// Loads the checkpoints of an ensemble (one is a plain segmenter), whose members must agree on classes
    /// (count and names), input channels, preprocessing and 2.5-D context; each resamples slices to its own training
    /// spacing.
    ///
    /// - Throws: `InferenceError.ensembleMismatch` naming the two checkpoints and the difference; what `load`
    ///   throws for each.
    public static func load(
        checkpoints paths: [String], context: Int? = nil, tileSize: Int? = nil, tileStep: Double = 0.5,
        limits: ReadLimits = .standard, precision: Precision? = nil
    ) throws -> VolumeSegmenter {
        guard let firstPath = paths.first else {
            throw InferenceError.ensembleMismatch(member: "", first: "", reason: "no checkpoint given")
        }
        let first = try EnsembleMember.load(
            firstPath, context: context, tileSize: tileSize, tileStep: tileStep, limits: limits, precision: precision)
        var segmenter = first.segmenter
        segmenter.mirrorAxes.add(first)
        for path in paths.dropFirst() {
            let member = try EnsembleMember.load(
                path, context: context, tileSize: tileSize, tileStep: tileStep, limits: limits, precision: precision)
            if let reason = member.difference(from: first) {
                throw InferenceError.ensembleMismatch(member: path, first: firstPath, reason: reason)
            }
            segmenter.members.append(member.segmenter.model)
            segmenter.memberSpacings[ObjectIdentifier(member.segmenter.model)] = member.segmenter.sampling.spacing
            segmenter.mirrorAxes.add(member)
        }
        return segmenter
    }

    /// `--tta`'s default: mirroring for an ensemble or a 2.5-D model (one that sees a volume's neighbouring slices,
    /// SliceLab's nearest to nnU-Net's 3-D configurations), as nnU-Net mirrors; none for one 2-D model, whose
    /// output stays exactly the model's (what `segment` gave before ensembles, and what the export computes), at
    /// 1 × the time instead of 2–4 ×.
    public var defaultAugmentation: TestTimeAugmentation {
        members.count > 1 || sampling.context > 0 ? .mirror : .none
    }

    /// Sets the views of each slice. Mirroring flips only the axes every member was trained to flip (nnU-Net's
    /// allowed mirroring axes; both for a checkpoint that does not record its training).
    ///
    /// - Returns: one note for each member and axis left unmirrored because its training never flipped it.
    public mutating func augment(_ augmentation: TestTimeAugmentation) -> [String] {
        views = augmentation.views(rows: mirrorAxes.rows.trained, columns: mirrorAxes.columns.trained)
        guard augmentation != .none else { return [] }
        return [(mirrorAxes.rows.untrained, "up–down"), (mirrorAxes.columns.untrained, "left–right")].flatMap {
            paths, axis in
            paths.map {
                "--tta \(augmentation.rawValue): \($0) was trained without \(axis) flips, so no view is mirrored "
                    + axis
            }
        }
    }

    /// The checkpoints `--model` names: files as they are; a folder stands for its fold models
    /// (`fold_*/model.h5`, by fold number).
    ///
    /// - Throws: `InputError.unsupportedFile` for a folder without fold models.
    public static func checkpoints(_ paths: [String]) throws -> [String] {
        try paths.flatMap { path -> [String] in
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else {
                return [path]
            }
            let folds = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            let models =
                folds.compactMap { name -> (Int, String)? in
                    guard name.hasPrefix("fold_"), let k = Int(name.dropFirst(5)) else { return nil }
                    let model = URL(fileURLWithPath: path).appendingPathComponent(name).appendingPathComponent(
                        "model.h5"
                    ).path
                    return FileManager.default.fileExists(atPath: model) ? (k, model) : nil
                }
                .sorted { $0.0 < $1.0 }.map(\.1)
            guard !models.isEmpty else {
                throw InputError.unsupportedFile(
                    file: path, reason: "a model folder holds fold models fold_K/model.h5; none found")
            }
            return models
        }
    }

    /// Forward passes a slice costs: members × views.
    public var passesPerSlice: Int { members.count * views.count }

    /// The cost in words, as `--timings` prints it.
    public var passesDescription: String {
        "\(members.count) model(s) × \(views.count) view(s) = \(passesPerSlice) forward passes a slice"
    }

    /// The log of the members' and views' mean softmax [1, K, rows, columns] for each prepared input: the views of
    /// the inputs at one scale run as one batch per member, each output flipped back before its softmax is added.
    /// The log keeps every consumer of logits right: their softmax is the mean probability, their argmax its.
    func averagedLogProbabilities(
        _ inputs: [[Float]], channels: Int, rows: Int, columns: Int, spacing: [Double]?
    ) throws -> [SliceOutput] {
        let (k, plane) = (classCount, rows * columns)
        var sums = [[Float]](repeating: [Float](repeating: 0, count: k * plane), count: inputs.count)
        var entropies = [[Float]](repeating: [Float](repeating: 0, count: plane), count: inputs.count)
        var scales: [Double] = []
        for view in views where !scales.contains(view.scale) { scales.append(view.scale) }
        for scale in scales {
            let flips = views.filter { $0.scale == scale }
            let batch = inputs.flatMap { input in
                flips.map { Self.flipped(input, planes: channels, rows: rows, columns: columns, $0) }
            }
            for member in members {
                let outputs = try forward(
                    member, batch, channels: channels, rows: rows, columns: columns, spacing: spacing, scale: scale)
                for (index, output) in outputs.enumerated() {
                    let b = index / flips.count
                    Self.accumulate(
                        output.values, classes: k, rows: rows, columns: columns, flips[index % flips.count],
                        sum: &sums[b], entropy: &entropies[b])
                }
            }
        }
        let count = Float(passesPerSlice)
        return zip(sums, entropies).map { sum, entropy in
            SliceOutput(
                logits: FloatTensor(
                    shape: [1, k, rows, columns],
                    values: sum.map { Foundation.log(max($0 / count, .leastNormalMagnitude)) }),
                expectedEntropy: entropy.map { $0 / count })
        }
    }

    /// Adds the softmax of `logits` [K, rows, columns], flipped back as `view` says, to `sum` [K, rows, columns], and
    /// its predictive entropy to `entropy` [rows, columns]: per pixel e = exp(x − max x), p = e / Σe, and
    /// −Σ p log p as log Σe − Σ p (x − max x) (one logarithm a pixel, not one a class). One pass over the logits,
    /// rows in parallel on the compute threads.
    static func accumulate(
        _ logits: [Float], classes k: Int, rows: Int, columns: Int, _ view: TestTimeAugmentation.View,
        sum: inout [Float], entropy: inout [Float]
    ) {
        let plane = rows * columns
        logits.withUnsafeBufferPointer { logits in
            sum.withUnsafeMutableBufferPointer { sum in
                entropy.withUnsafeMutableBufferPointer { entropy in
                    let (x, sums, entropies) = (logits.baseAddress!, sum.baseAddress!, entropy.baseAddress!)
                    concurrentForEach(0..<rows) { row in
                        let target = (view.flipRows ? rows - 1 - row : row) * columns
                        withUnsafeTemporaryAllocation(of: Float.self, capacity: k) { e in
                            for column in 0..<columns {
                                let source = row * columns + column
                                let pixel = target + (view.flipColumns ? columns - 1 - column : column)
                                var largest = -Float.infinity
                                for c in 0..<k { largest = max(largest, x[c * plane + source]) }
                                var total: Float = 0
                                for c in 0..<k {
                                    e[c] = Foundation.exp(x[c * plane + source] - largest)
                                    total += e[c]
                                }
                                var expected: Float = 0
                                for c in 0..<k {
                                    let p = e[c] / total
                                    sums[c * plane + pixel] += p
                                    expected += p * (x[c * plane + source] - largest)
                                }
                                entropies[pixel] += Foundation.log(total) - expected
                            }
                        }
                    }
                }
            }
        }
    }

    /// `values` [planes, rows, columns] flipped as `view` says (a flip is its own inverse).
    static func flipped(
        _ values: [Float], planes: Int, rows: Int, columns: Int, _ view: TestTimeAugmentation.View
    ) -> [Float] {
        guard view.flipRows || view.flipColumns else { return values }
        var out = [Float](repeating: 0, count: values.count)
        for plane in 0..<planes {
            for row in 0..<rows {
                let source = (plane * rows + (view.flipRows ? rows - 1 - row : row)) * columns
                let target = (plane * rows + row) * columns
                for column in 0..<columns {
                    out[target + column] = values[source + (view.flipColumns ? columns - 1 - column : column)]
                }
            }
        }
        return out
    }
}

/// One slice through the model(s): logits [1, K, rows, columns] (for an ensemble or views, the log of the mean
/// softmax) and, for more than one pass, the mean of each pass's predictive entropy per pixel.
public struct SliceOutput: Sendable {
    public var logits: FloatTensor
    public var expectedEntropy: [Float]?
}

/// Per-pixel uncertainty from class probabilities (natural log).
public enum Uncertainty {
    /// Predictive entropy −Σₖ pₖ log pₖ of each pixel of planes [K, pixels].
    public static func entropy(_ probabilities: [Float], classCount k: Int) -> [Float] {
        let plane = probabilities.count / k
        var entropy = [Float](repeating: 0, count: plane)
        for c in 0..<k {
            for i in 0..<plane {
                let p = probabilities[c * plane + i]
                if p > 0 { entropy[i] -= p * Foundation.log(p) }
            }
        }
        return entropy
    }

    /// A slice's predictive entropy (of the mean softmax) and, for an ensemble or views, the mutual information
    /// between the prediction and the member or view: the entropy less the passes' mean entropy (their
    /// disagreement; clamped at 0 against rounding).
    public static func maps(_ output: SliceOutput) -> (entropy: [Float], mutualInformation: [Float]?) {
        let entropy = Self.entropy(softmaxOverClasses(output.logits).values, classCount: output.logits.shape[1])
        let information = output.expectedEntropy.map { expected in zip(entropy, expected).map { max(0, $0 - $1) } }
        return (entropy, information)
    }
}
