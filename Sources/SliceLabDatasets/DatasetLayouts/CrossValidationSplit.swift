import Foundation

/// Which cases of an nnU-Net or Decathlon set train and which are scored: fold `fold` of `splits_final.json`
/// (beside `dataset.json`, else in `$nnUNet_preprocessed/<dataset folder>/`), else of a 5-fold split made as
/// nnU-Net makes it, seeded with `seed` (`--fold`, `--split-seed`).
public struct SplitSelection: Sendable, Equatable {
    /// The cross-validation fold (0…4 for the generated split; any fold the splits file has).
    public var fold: Int
    /// The seed of the generated split; nnU-Net's own is 12345, so the default gives nnU-Net's folds.
    public var seed: UInt64
    /// Where nnU-Net's preprocessed folders are (`$nnUNet_preprocessed`), or nil.
    public var preprocessedFolder: String?
    /// Whether a fold was asked for (`--fold`): a set of SliceLab's own layout then pools its train and val cases
    /// into the cross-validation split (its test cases stay held out); without it, its fixed splits.
    public var crossValidation = false

    public static let nnUNetSeed: UInt64 = 12345

    public init(
        fold: Int = 0, seed: UInt64 = SplitSelection.nnUNetSeed,
        preprocessedFolder: String? = ProcessInfo.processInfo.environment["nnUNet_preprocessed"]
    ) {
        (self.fold, self.seed, self.preprocessedFolder) = (fold, seed, preprocessedFolder)
    }
}

/// nnU-Net's cross-validation split (`nnunetv2.utilities.crossval_split.generate_crossval_split`): scikit-learn's
/// `KFold(n_splits: 5, shuffle: true, random_state: seed)` over the sorted case identifiers.
///
/// KFold shuffles the indices 0..<n with NumPy's legacy `RandomState(seed).shuffle` (MT19937, Fisher–Yates from
/// the end with masked rejection sampling), cuts them into `n_splits` consecutive folds, the first `n % n_splits`
/// one longer, and returns each fold's validation and training indices sorted. Reproducing that generator here
/// (rather than SliceLab's own `SeededGenerator`) is what makes the folds the ones nnU-Net trains on.
enum CrossValidationSplit {
    /// The folds of `identifiers` (sorted first, as nnU-Net sorts them): per fold, its train and val cases.
    static func folds(_ identifiers: [String], seed: UInt64, count: Int = 5) -> [(train: [String], val: [String])] {
        let keys = identifiers.sorted()
        guard keys.count >= count else {  // KFold refuses fewer samples than folds; nnU-Net then trains on all
            return [(keys, [])]
        }
        var indices = Array(0..<keys.count)
        var generator = MersenneTwister(seed: UInt32(truncatingIfNeeded: seed))
        for i in stride(from: indices.count - 1, through: 1, by: -1) {
            indices.swapAt(i, generator.interval(UInt32(i)))
        }
        var folds: [(train: [String], val: [String])] = []
        var start = 0
        for fold in 0..<count {
            let size = keys.count / count + (fold < keys.count % count ? 1 : 0)
            let val = Set(indices[start..<(start + size)])
            start += size
            folds.append(
                (
                    keys.indices.filter { !val.contains($0) }.map { keys[$0] },
                    keys.indices.filter { val.contains($0) }.map { keys[$0] }
                ))
        }
        return folds
    }

    /// The folds of a `splits_final.json` (a list of `{"train": [...], "val": [...]}`), or the problem.
    static func read(_ url: URL) throws -> [(train: [String], val: [String])] {
        guard let data = FileManager.default.contents(atPath: url.path),
            let list = (try? JSONSerialization.jsonObject(with: data)) as? [[String: Any]], !list.isEmpty
        else {
            throw DatasetError.invalidDescription(
                file: url.path,
                reason: "not a splits file (a JSON list of "
                    + "{\"train\": [...], \"val\": [...]} as nnU-Net writes it)")
        }
        return try list.enumerated().map { index, fold in
            guard let train = fold["train"] as? [String], let val = fold["val"] as? [String] else {
                throw DatasetError.invalidDescription(
                    file: url.path,
                    reason: "fold \(index) lacks a 'train' or "
                        + "'val' list of case names")
            }
            return (train, val)
        }
    }

    /// Selects fold `selection.fold` for `cases`: from a splits file if there is one, else the generated split.
    /// Returns the splits (`train`, `val`, and `test`, the cases `compare` scores: the labeled held-out cases
    /// `heldOut` when there are any, else `val`) and how they were made.
    ///
    /// - Throws: `DatasetError.invalidDescription` for a bad splits file or a fold it does not have.
    static func select(cases: [String], folder: URL, selection: SplitSelection, heldOut: [String] = [])
        throws -> (splits: [String: [String]], json: String, foldCount: Int)
    {
        var candidates = [folder.appendingPathComponent("splits_final.json")]
        if let preprocessed = selection.preprocessedFolder, !preprocessed.isEmpty {
            candidates.append(
                URL(fileURLWithPath: preprocessed).appendingPathComponent(folder.lastPathComponent)
                    .appendingPathComponent("splits_final.json"))
        }
        let folds: [(train: [String], val: [String])]
        var record: [String: Any] = ["fold": selection.fold]
        if let file = candidates.first(where: { FileManager.default.fileExists(atPath: $0.path) }) {
            folds = try read(file)
            record["source"] = file.path
        } else {
            folds = self.folds(cases, seed: selection.seed)
            record["source"] = "generated"
            record["method"] = "nnU-Net generate_crossval_split: KFold(5, shuffle) over sorted case ids"
            record["seed"] = selection.seed
        }
        guard folds.indices.contains(selection.fold) else {
            throw DatasetError.invalidDescription(
                file: (record["source"] as? String) ?? folder.path,
                reason: "--fold \(selection.fold): the split has folds 0…\(folds.count - 1)")
        }
        let (train, val) = folds[selection.fold]
        record["train"] = train
        record["val"] = val
        if !heldOut.isEmpty { record["test"] = heldOut }
        return (
            ["train": train, "val": val, "test": heldOut.isEmpty ? val : heldOut], DatasetLayouts.jsonText(record),
            folds.count
        )
    }
}

/// MT19937 as NumPy's legacy `RandomState(seed)` seeds and draws it (`mt19937_seed`, `random_interval`): only for
/// reproducing nnU-Net's folds.
struct MersenneTwister {
    private var state = [UInt32](repeating: 0, count: 624)
    private var position = 624

    init(seed: UInt32) {
        state[0] = seed
        for i in 1..<624 {
            state[i] = 1_812_433_253 &* (state[i - 1] ^ (state[i - 1] >> 30)) &+ UInt32(i)
        }
    }

    mutating func next() -> UInt32 {
        if position >= 624 {
            for i in 0..<624 {
                let y = (state[i] & 0x8000_0000) | (state[(i + 1) % 624] & 0x7fff_ffff)
                state[i] = state[(i + 397) % 624] ^ (y >> 1) ^ (y & 1 == 0 ? 0 : 0x9908_b0df)
            }
            position = 0
        }
        var y = state[position]
        position += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9d2c_5680
        y ^= (y << 15) & 0xefc6_0000
        y ^= y >> 18
        return y
    }

    /// A uniform integer in 0...max: the draw masked to max's bit width, redrawn while above max.
    mutating func interval(_ max: UInt32) -> Int {
        guard max > 0 else { return 0 }
        var mask = max
        for shift in [1, 2, 4, 8, 16] as [UInt32] { mask |= mask >> shift }
        while true {
            let value = next() & mask
            if value <= max { return Int(value) }
        }
    }
}
