import Foundation

/// One shard of a run: shard `index` (0-based, as Slurm's `SLURM_ARRAY_TASK_ID` with `--array=0-(N-1)` and
/// as an MPI rank) of `count` (`--shard I/N`). An MPI launcher passes `(rank, size)`.
public struct Shard: Codable, Equatable, Sendable, CustomStringConvertible {
    public let index: Int
    public let count: Int

    /// - Throws: `DatasetError.invalidShard` unless `0 <= index < count`.
    public init(index: Int, count: Int) throws {
        guard count >= 1, (0..<count).contains(index) else {
            throw DatasetError.invalidShard(text: "\(index)/\(count)")
        }
        (self.index, self.count) = (index, count)
    }

    /// Parses `I/N` (I 0-based).
    ///
    /// - Throws: `DatasetError.invalidShard` quoting the text.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else {
            throw DatasetError.invalidShard(text: text)
        }
        try self.init(index: index, count: count)
    }

    public var description: String { "\(index)/\(count)" }
}

/// The size-balanced split of a run's cases over shards.
///
/// Longest processing time first: cases are taken from the largest (bytes on disk, a proxy for work) to the
/// smallest, ties in case order, and each goes to the shard with the least total so far (ties to the lowest
/// index). Within a shard, cases keep the run's order. The split depends only on the sizes and the count,
/// so every shard of a job computes the same one.
public enum ShardSplit {
    /// The shard of each case.
    ///
    /// - Parameters:
    ///   - sizes: each case's size in bytes, in the run's case order.
    ///   - count: the number of shards (≥ 1).
    /// - Returns: `assignment[i]`, the shard (0 ..< count) of case i.
    public static func assign(sizes: [Int64], count: Int) -> [Int] {
        precondition(count >= 1, "a split needs at least one shard")
        let order = sizes.indices.sorted { sizes[$0] != sizes[$1] ? sizes[$0] > sizes[$1] : $0 < $1 }
        var loads = [Int64](repeating: 0, count: count)
        var assignment = [Int](repeating: 0, count: sizes.count)
        for caseIndex in order {
            var lightest = 0
            for shard in 1..<count where loads[shard] < loads[lightest] { lightest = shard }
            assignment[caseIndex] = lightest
            loads[lightest] += max(1, sizes[caseIndex])
        }
        return assignment
    }

    /// The indices (in case order) of the cases of `shard`.
    ///
    /// - Throws: `DatasetError.moreShardsThanCases` when some shard would be empty.
    public static func indices(of shard: Shard, sizes: [Int64]) throws -> [Int] {
        guard shard.count <= sizes.count else {
            throw DatasetError.moreShardsThanCases(shards: shard.count, cases: sizes.count)
        }
        let assignment = assign(sizes: sizes, count: shard.count)
        return assignment.indices.filter { assignment[$0] == shard.index }
    }

    /// The bytes of a file, or of every file under a folder (a series); 0 when unreadable.
    public static func diskSize(_ path: String) -> Int64 {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: path, isDirectory: &isDirectory) else { return 0 }
        func size(_ file: String) -> Int64 {
            ((try? manager.attributesOfItem(atPath: file))?[.size] as? NSNumber)?.int64Value ?? 0
        }
        guard isDirectory.boolValue else { return size(path) }
        return ((try? manager.subpathsOfDirectory(atPath: path)) ?? []).reduce(0) { $0 + size(path + "/" + $1) }
    }
}

/// What a shard's part of a results file records beside its runs (the `/shard` group): which shard of which
/// run it is, so that `slicelab merge` can check the parts belong together and order their cases.
public struct ShardRecord: Equatable, Sendable {
    /// The command that wrote the part ("compare", "evaluate").
    public var command: String
    public var shard: Shard
    /// The run's configuration as JSON, without what differs between shards (output, shard, threads).
    public var configJSON: String
    /// Every case of the run in the order one process lists them (all shards).
    public var caseOrder: [String]
    /// The cases of this shard, in that order.
    public var cases: [String]
    /// Cases skipped as bad (`--skip-bad`) with the reason; every shard records all of them, as one process
    /// reports all of them.
    public var skipped: [(name: String, reason: String)]
    /// The runs in the order the command made them (the file lists them by name).
    public var runOrder: [String]
    /// The paired comparisons (run A, run B) the command writes; the merge computes them over all cases.
    public var comparisons: [(a: String, b: String)]

    public static func == (a: ShardRecord, b: ShardRecord) -> Bool {
        (a.command, a.shard, a.configJSON, a.caseOrder, a.cases) == (
            b.command, b.shard, b.configJSON, b.caseOrder,
            b.cases
        )
            && a.skipped.map(\.name) == b.skipped.map(\.name) && a.skipped.map(\.reason) == b.skipped.map(\.reason)
            && a.runOrder == b.runOrder && a.comparisons.map(\.a) == b.comparisons.map(\.a)
            && a.comparisons.map(\.b) == b.comparisons.map(\.b)
    }

    public init(
        command: String, shard: Shard, configJSON: String, caseOrder: [String], cases: [String],
        skipped: [(name: String, reason: String)], runOrder: [String], comparisons: [(a: String, b: String)]
    ) {
        self.command = command
        self.shard = shard
        self.configJSON = configJSON
        self.caseOrder = caseOrder
        self.cases = cases
        self.skipped = skipped
        self.runOrder = runOrder
        self.comparisons = comparisons
    }
}
