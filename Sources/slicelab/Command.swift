import Distributed
import SliceLabDatasets
import SliceLabKit
import SliceLabSupport

/// A `slicelab` subcommand: its declaration and the call into the `SliceLab` library that does the work.
protocol Command: Sendable {
    static var spec: CommandSpec { get }
    /// Runs the command. Throws `UsageError` for bad usage (exit 2) and any other error for failures (exit 1).
    static func run(_ arguments: ParsedArguments) throws
}

/// Every subcommand, in the order `slicelab --help` lists them.
let commands: [Command.Type] = [
    InfoCommand.self, ConvertCommand.self, SegmentCommand.self, ClusterCommand.self,
    EvaluateCommand.self, CompareCommand.self, MergeCommand.self, TrainCommand.self, ExportCommand.self,
    QuantizeCommand.self, DatasetCommand.self, DemoCommand.self, QueryCommand.self, PullCommand.self, PushCommand.self,
    ListenCommand.self
]

/// `--max-memory`, declared by every command that reads images, labels or series from outside files.
let maxMemoryOption = OptionSpec(
    "max-memory", valueName: "SIZE",
    help: "Refuse an image, volume or dataset that would take more than SIZE in memory (e.g. 4G, 512M, bytes).",
    default: "4G")

/// The read limits `--max-memory` asks for; a malformed size is a usage error.
func readLimits(_ arguments: ParsedArguments, command: String) throws -> ReadLimits {
    let text = arguments.string("max-memory") ?? "4G"
    guard var limits = ReadLimits(parsing: text) else {
        throw UsageError(
            "slicelab \(command): --max-memory \(text): expected a size such as 4G, 512M or 1000000 (bytes)")
    }
    limits.remedy = "raise it with --max-memory"
    return limits
}

/// `--shard I/N`, declared by the commands that run a cohort in shards (`compare`, `evaluate`, `segment`).
let shardOption = OptionSpec(
    "shard", valueName: "I/N",
    help: "Run only shard I of N (0-based: 0 ≤ I < N) of the size-balanced split of the cases and write a part "
        + "for 'slicelab merge'.")

/// The shard `--shard` asks for, or nil; a malformed one is a usage error.
func parseShard(_ arguments: ParsedArguments, command: String) throws -> Shard? {
    guard let text = arguments.string("shard") else { return nil }
    do { return try Shard(parsing: text) } catch { throw UsageError("slicelab \(command): \(error)") }
}

/// The job, when a launcher (`mpirun -np N`, `srun --mpi=pmix`) started this process as one of several ranks of
/// a cohort command: every rank then runs its own shard and rank 0 merges (`ShardedJob`). Nil for a single
/// process, which never initialises MPI. `--shard` is refused under a launcher.
func cohortJob(_ arguments: ParsedArguments, command: String) throws -> Communicator? {
    let communicator = try Communicator.fromEnvironment()
    guard communicator.isDistributed else { return nil }
    if let shard = arguments.string("shard") {
        throw UsageError(
            "slicelab \(command): --shard \(shard) under \(communicator.launcher!.kind.rawValue): every "
                + "rank runs its own shard of the job; leave --shard out")
    }
    return communicator
}

/// An error `report` has printed already; `main` exits with its status.
struct ReportedError: Error {
    let status: Int32
}

/// Runs `body` as one rank of `job`, then leaves the job. A failure is printed before the rank leaves: the launcher
/// ends the other ranks as soon as one exits non-zero, so each rank says why it failed before the last barrier.
func runAsRank(_ job: Communicator, command: String, _ body: () throws -> Void) throws {
    do { try body() } catch {
        let status = report(error, command: command)
        job.finish()
        throw ReportedError(status: status)
    }
    job.finish()
}

/// Prints `error` as the command's failure and returns the exit status: 2 for a usage error, 1 otherwise, and an
/// error already printed (`ReportedError`) only gives its status.
func report(_ error: Error, command: String) -> Int32 {
    switch error {
    case let reported as ReportedError:
        return reported.status
    case let usage as UsageError:
        standardError(usage.message)
        return 2
    default:
        standardError("slicelab \(command): error: \(error)")
        return 1
    }
}
