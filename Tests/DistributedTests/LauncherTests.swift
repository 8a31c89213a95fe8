import Distributed
import Testing

/// Launcher detection from the environment alone, and the single process that never touches MPI.
struct LauncherTests {
    @Test func noLauncherIsASingleProcessWithoutMPI() throws {
        #expect(try Launcher.detect(["PATH": "/usr/bin", "HOME": "/root"]) == nil)
        // A one-task Slurm step (plain `srun` or a batch script's shell) is one process too.
        #expect(try Launcher.detect(["SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_JOB_ID": "7"]) == nil)
        let single = try Communicator.fromEnvironment(["HOME": "/root"])
        #expect(single.rank == 0 && single.size == 1 && !single.isDistributed && single.launcher == nil)
        var values: [Float] = [1, 2, 3]
        try single.allReduceSum(&values)
        try single.broadcast(&values)
        try single.barrier()
        #expect(values == [1, 2, 3])
        var doubles: [Double] = [0.5]
        try single.allReduceSum(&doubles)
        #expect(doubles == [0.5])
    }

    @Test func openMPIAndPMIxAreDetected() throws {
        #expect(
            try Launcher.detect(["OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4"])
                == Launcher(kind: .openMPI, rank: 1, size: 4))
        #expect(
            try Launcher.detect(["PMIX_RANK": "2", "SLURM_STEP_NUM_TASKS": "3", "SLURM_STEP_ID": "0"])
                == Launcher(kind: .pmix, rank: 2, size: 3))
    }

    @Test func inconsistentOrUnsupportedLaunchersAreOneClearError() throws {
        #expect(
            throws: DistributedError.invalidEnvironment(variable: "OMPI_COMM_WORLD_RANK/SIZE", value: "rank 4 of 4")
        ) {
            try Launcher.detect(["OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_SIZE": "4"])
        }
        #expect(throws: DistributedError.invalidEnvironment(variable: "OMPI_COMM_WORLD_RANK", value: "x")) {
            try Launcher.detect(["OMPI_COMM_WORLD_RANK": "x", "OMPI_COMM_WORLD_SIZE": "4"])
        }
        do {
            _ = try Launcher.detect(["SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "2"])
            Issue.record("a 2-task srun step without PMIx was accepted")
        } catch let error as DistributedError {
            #expect(error.description.contains("srun --mpi=pmix"), "\(error)")
        }
    }
}
