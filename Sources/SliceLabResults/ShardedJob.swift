import Distributed
import Foundation
import SliceLabDatasets
import SliceLabIO

/// `mpirun -np N slicelab segment|compare|evaluate …` (or `srun --mpi=pmix`): the cohort run as one job of N
/// ranks. Rank r runs shard r/N of the size-balanced split (`ShardSplit`, as `--shard r/N` would) into a part
/// beside the output; once every rank has written its part, rank 0 merges the parts into the output one process
/// would have written (`ResultsMerge`, `SegmentationManifest.merge`) and removes them.
///
/// The output's folder must be one every rank sees (a cluster's shared file system). A rank that fails (an error,
/// not a bad case: those are skipped as one process skips them) makes every rank exit non-zero with a line
/// naming it, and nothing is written to the output; a rank that dies ends the job through the launcher. The merge
/// is atomic, so no half-merged output is ever left.
public enum ShardedJob {
    /// What the job's ranks learn once it ends.
    public enum Outcome<Merged> {
        /// Rank 0: the merged output.
        case merged(Merged)
        /// Another rank: its part was merged by rank 0.
        case contributed
    }

    /// Runs `work` for this rank's shard, then (rank 0) `merge` over every rank's part.
    ///
    /// - Parameters:
    ///   - communicator: the job (`Communicator.fromEnvironment()`); must be distributed.
    ///   - output: the results file or folder the job writes.
    ///   - partSuffix: the ending of a part's name (".h5" for results files, "" for folders).
    ///   - work: writes the part of `shard` to the given path (`--shard` semantics).
    ///   - merge: joins the parts (in rank order) into `output`, atomically.
    /// - Throws: this rank's own error from `work` or `merge`, `ResultsError` when another rank failed.
    public static func run<Merged>(
        communicator: Communicator, output: String, partSuffix: String,
        work: (Shard, String) throws -> Void,
        merge: ([String], String) throws -> Merged
    ) throws -> Outcome<Merged> {
        let (rank, size) = (communicator.rank, communicator.size)
        // Every rank names the parts folder after rank 0's process id, so two jobs never share one.
        var jobID = [rank == 0 ? Double(getpid()) : 0]
        try communicator.allReduceSum(&jobID, what: "job start")
        let outputURL = URL(fileURLWithPath: output)
        let folder = outputURL.deletingLastPathComponent()
            .appendingPathComponent(".\(outputURL.lastPathComponent).parts-\(Int(jobID[0]))").path
        let parts = (0..<size).map { "\(folder)/part-\($0)\(partSuffix)" }

        var failure: Error?
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try work(Shard(index: rank, count: size), parts[rank])
        } catch {
            failure = error
            // Also into the shared folder: a launcher that ends the job may drop this rank's own error line, so
            // the other ranks repeat it (best effort: the rank's own line is the primary report).
            try? Data("\(error)".utf8).write(to: URL(fileURLWithPath: parts[rank] + ".error"))
        }
        // Ranks finish their shards at different times: this wait polls, sleeping, and has no timeout (a rank that
        // dies ends the job through the launcher; each case's decoders are bounded in time).
        var failed = [Double](repeating: 0, count: size)
        failed[rank] = failure == nil ? 0 : 1
        failed = try communicator.startAllReduceSum(failed, what: "waiting for every rank's shard")
            .wait(bounded: false)
        let failedRanks = failed.indices.filter { failed[$0] > 0 }
        let reasons = failedRanks.filter { $0 != rank }.map { failedRank in
            "rank \(failedRank): "
                + ((try? String(contentsOfFile: parts[failedRank] + ".error", encoding: .utf8))
                    ?? "its error is not in \(folder)")
        }

        // Removed once every rank has read the failed ranks' errors (the merge reduction below is the barrier).
        defer { if rank == 0 { try? FileManager.default.removeItem(atPath: folder) } }
        var merged: Merged?
        var mergeFailed = [0.0]
        if rank == 0 {
            if failedRanks.isEmpty {
                do { merged = try merge(parts, output) } catch {
                    failure = error
                    mergeFailed[0] = 1
                }
            }
        }
        try communicator.allReduceSum(&mergeFailed, what: "merge")
        if let failure { throw failure }
        if !failedRanks.isEmpty {
            throw ResultsError.ranksFailed(ranks: failedRanks, output: output, reasons: reasons)
        }
        if mergeFailed[0] > 0 { throw ResultsError.mergeFailed(output: output) }
        return merged.map { .merged($0) } ?? .contributed
    }
}
