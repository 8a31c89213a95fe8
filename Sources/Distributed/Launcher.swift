import Foundation

/// How this process was started: alone, or as one rank of a job by a launcher that MPI can join.
///
/// Detected from the environment only, so the decision costs nothing and needs no MPI call: a process started
/// without a launcher never initialises MPI. Reusable by any command that runs as a job (`train`, and sharded
/// `segment`/`compare`/`evaluate`).
public struct Launcher: Equatable, Sendable {
    /// Who started the process.
    public enum Kind: String, Equatable, Sendable {
        /// Open MPI's `mpirun`/`mpiexec` (`OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`).
        case openMPI = "mpirun"
        /// A PMIx server, such as Slurm's `srun --mpi=pmix` (`PMIX_RANK`, with `SLURM_STEP_NUM_TASKS`).
        case pmix = "PMIx"
    }

    public let kind: Kind
    /// This process's rank in 0..<size, as the launcher announces it.
    public let rank: Int
    /// The number of ranks of the job.
    public let size: Int

    public init(kind: Kind, rank: Int, size: Int) {
        self.kind = kind
        self.rank = rank
        self.size = size
    }

    /// The launcher described by `environment`, or nil for a process started on its own (or as a one-task Slurm
    /// step, which is a single process too).
    ///
    /// - Throws: `DistributedError.unsupportedLauncher` for a multi-task `srun` step without PMIx (Debian's Open
    ///   MPI cannot join it: use `srun --mpi=pmix`), and `.invalidEnvironment` for a rank or size that is not a
    ///   number or out of range.
    public static func detect(_ environment: [String: String]) throws -> Launcher? {
        func number(_ name: String) throws -> Int? {
            guard let text = environment[name] else { return nil }
            guard let value = Int(text.trimmingCharacters(in: .whitespaces)), value >= 0 else {
                throw DistributedError.invalidEnvironment(variable: name, value: text)
            }
            return value
        }
        func checked(_ kind: Kind, rank: Int, size: Int, names: String) throws -> Launcher {
            guard size >= 1, rank < size else {
                throw DistributedError.invalidEnvironment(variable: names, value: "rank \(rank) of \(size)")
            }
            return Launcher(kind: kind, rank: rank, size: size)
        }
        if let rank = try number("OMPI_COMM_WORLD_RANK") {
            guard let size = try number("OMPI_COMM_WORLD_SIZE") else {
                throw DistributedError.invalidEnvironment(variable: "OMPI_COMM_WORLD_SIZE", value: "(unset)")
            }
            return try checked(.openMPI, rank: rank, size: size, names: "OMPI_COMM_WORLD_RANK/SIZE")
        }
        if let rank = try number("PMIX_RANK") {
            let size = try number("SLURM_STEP_NUM_TASKS") ?? number("SLURM_NTASKS") ?? number("PMIX_SIZE")
            guard let size else {
                throw DistributedError.invalidEnvironment(variable: "SLURM_STEP_NUM_TASKS", value: "(unset)")
            }
            return try checked(.pmix, rank: rank, size: size, names: "PMIX_RANK/SLURM_STEP_NUM_TASKS")
        }
        if environment["SLURM_STEP_ID"] != nil, let tasks = try number("SLURM_STEP_NUM_TASKS"), tasks > 1 {
            throw DistributedError.unsupportedLauncher(
                "a \(tasks)-task srun step without PMIx; start it with `srun --mpi=pmix` (Debian's Open MPI does "
                    + "not support pmi2) or run mpirun inside the allocation")
        }
        return nil
    }
}
