import Foundation

/// A scalar type the collectives carry: `Float` or `Double`.
public protocol ReducibleScalar: BinaryFloatingPoint {
    static var isDouble: Bool { get }
}

extension Float: ReducibleScalar { public static var isDouble: Bool { false } }
extension Double: ReducibleScalar { public static var isDouble: Bool { true } }

/// The ranks of a job and the collectives between them, or a single process whose collectives do nothing.
///
/// `Communicator.fromEnvironment()` joins the job a launcher started (`mpirun`, `srun --mpi=pmix`); without a
/// launcher it returns `single` and MPI is never initialised. Collectives run on the thread that created the
/// communicator (MPI_THREAD_FUNNELED). Every wait is bounded by `timeoutSeconds`: a collective that waits longer
/// prints one line and aborts the whole job, so a dead or hung rank never leaves the others waiting.
public final class Communicator {
    /// This process's rank in 0..<size.
    public let rank: Int
    /// The number of ranks.
    public let size: Int
    /// The launcher that started the job, nil for a single process.
    public let launcher: Launcher?
    /// How long a collective may wait for the other ranks before the job is aborted, in seconds.
    public var timeoutSeconds: Double
    private var finished = false
    private lazy var watchdog = Watchdog()

    /// A single process: rank 0 of 1, collectives are no-ops, MPI untouched.
    public static var single: Communicator { Communicator(rank: 0, size: 1, launcher: nil, timeoutSeconds: 0) }

    private init(rank: Int, size: Int, launcher: Launcher?, timeoutSeconds: Double) {
        self.rank = rank
        self.size = size
        self.launcher = launcher
        self.timeoutSeconds = timeoutSeconds
    }

    /// Joins the job `launcher` started (initialising MPI), or returns `single` for nil.
    ///
    /// - Throws: `DistributedError.mpiFailed` when MPI cannot start; `.invalidEnvironment` when MPI's rank and
    ///   size disagree with the launcher's. Rests on `MPI_Init_thread`, `MPI_Comm_rank`, `MPI_Comm_size`.
    public static func join(_ launcher: Launcher?, timeoutSeconds: Double = 30) throws -> Communicator {
        guard let launcher else { return .single }
        let (rank, size) = try MPICalls.initialize()
        guard rank == launcher.rank, size == launcher.size else {
            throw DistributedError.invalidEnvironment(
                variable: "rank/size",
                value: "MPI says rank \(rank) of \(size), \(launcher.kind.rawValue) said "
                    + "\(launcher.rank) of \(launcher.size)")
        }
        return Communicator(rank: rank, size: size, launcher: launcher, timeoutSeconds: timeoutSeconds)
    }

    /// `join(Launcher.detect(environment))` for this process's environment; `SLICELAB_MPI_TIMEOUT` (seconds)
    /// overrides the collective timeout of 30 s.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        throws -> Communicator
    {
        let timeout = environment["SLICELAB_MPI_TIMEOUT"].flatMap(Double.init).flatMap { $0 > 0 ? $0 : nil } ?? 30
        return try join(Launcher.detect(environment), timeoutSeconds: timeout)
    }

    /// Whether there are other ranks to talk to.
    public var isDistributed: Bool { launcher != nil && size > 1 }

    deinit { finish() }

    /// Leaves the job (MPI_Finalize) after a last barrier; nothing for a single process. Idempotent.
    public func finish() {
        guard launcher != nil, !finished else { return }
        finished = true
        try? barrier()
        MPICalls.finalize()
    }

    /// Ends every rank of the job after printing `line` to standard error; for a single process, exits.
    /// Rests on `MPI_Abort`.
    public func abort(_ line: String, code: Int32 = 1) -> Never {
        FileHandle.standardError.write(Data((line + "\n").utf8))
        guard launcher != nil else { exit(code) }
        MPICalls.abort(code: code)
    }

    // MARK: - Collectives

    /// Sums `values` over all ranks, in place (every rank gets the sum), returning when done. Rests on
    /// `MPI_Allreduce`, bounded by the timeout (a watchdog thread ends the process past it).
    public func allReduceSum<T: ReducibleScalar>(_ values: inout [T], what: String = "all-reduce") throws {
        try values.withUnsafeMutableBufferPointer { try allReduceSum($0, what: what) }
    }

    /// Sums `buffer` over all ranks, in place. Open MPI's blocking `MPI_Allreduce` (its tuned algorithms) took
    /// 20–48 ms for 50.6 MB on two ranks here, its non-blocking `MPI_Iallreduce` (libnbc) 80–100 ms, and without
    /// an asynchronous progress thread the latter does not overlap with computation anyway; so the collectives
    /// that a step waits for are blocking, and only `startAllReduceSum` (for waits of unknown length) polls.
    public func allReduceSum<T: ReducibleScalar>(
        _ buffer: UnsafeMutableBufferPointer<T>,
        what: String = "all-reduce"
    ) throws {
        guard isDistributed, let base = buffer.baseAddress, buffer.count > 0 else { return }
        try bounded(what) {
            try MPICalls.allReduce(
                UnsafeMutableRawPointer(base), count: buffer.count,
                double: T.isDouble)
        }
    }

    /// Starts summing `values` over all ranks; `PendingSum.wait()` returns the sums, sleeping between polls, so a
    /// rank that waits long for the others leaves the CPU to them. The values are copied, so the caller may
    /// reuse its array at once. Rests on `MPI_Iallreduce`.
    public func startAllReduceSum<T: ReducibleScalar>(_ values: [T], what: String = "all-reduce") throws
        -> PendingSum<T>
    {
        let pending = PendingSum(values, communicator: self, what: what)
        if isDistributed && !values.isEmpty {
            pending.request = try MPICalls.startAllReduce(
                UnsafeMutableRawPointer(pending.storage.baseAddress!),
                count: values.count, double: T.isDouble)
        }
        return pending
    }

    /// Replaces `values` with root's on every rank. Rests on `MPI_Ibcast`.
    public func broadcast(_ values: inout [Float], root: Int = 0, what: String = "broadcast") throws {
        guard isDistributed, !values.isEmpty else { return }
        let pending = PendingSum(values, communicator: self, what: what)
        pending.request = try MPICalls.startBroadcast(
            UnsafeMutableRawPointer(pending.storage.baseAddress!),
            count: values.count, root: root)
        values = try pending.wait()
    }

    /// Waits until every rank arrives. Rests on `MPI_Ibarrier`.
    public func barrier(what: String = "barrier") throws {
        guard isDistributed else { return }
        var request = try MPICalls.startBarrier()
        try waitFor(&request, what: what)
    }

    /// Runs a blocking collective under the watchdog: past the timeout the process prints one line and exits 1,
    /// and the launcher ends the other ranks (MPI_Abort may not be called from the watchdog's thread).
    private func bounded(_ what: String, _ body: () throws -> Void) throws {
        watchdog.arm(
            seconds: timeoutSeconds,
            line: "slicelab: "
                + DistributedError.timedOut(
                    operation: what, rank: rank, seconds: timeoutSeconds
                ).description + " (a rank died or hangs); ending the job")
        defer { watchdog.disarm() }
        try body()
    }

    /// Polls `request` until it completes, aborting the job past the timeout (never, with `bounded` false).
    fileprivate func waitFor(_ request: inout RequestHandle, what: String, bounded: Bool = true) throws {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        var pause: UInt32 = 20
        while try !MPICalls.test(&request) {
            if bounded, Date() > deadline {
                abort(
                    "slicelab: "
                        + DistributedError.timedOut(operation: what, rank: rank, seconds: timeoutSeconds)
                        .description + " (a rank died or hangs); aborting the job")
            }
            usleep(pause)
            pause = min(pause * 2, 2000)
        }
    }
}

/// A sum (or broadcast) started by `Communicator`, owning its buffer until `wait()`.
public final class PendingSum<T: ReducibleScalar> {
    fileprivate let storage: UnsafeMutableBufferPointer<T>
    fileprivate var request: RequestHandle?
    private let communicator: Communicator
    private let what: String

    fileprivate init(_ values: [T], communicator: Communicator, what: String) {
        storage = UnsafeMutableBufferPointer<T>.allocate(capacity: max(values.count, 1))
        _ = storage.initialize(from: values)
        self.communicator = communicator
        self.what = what
    }

    deinit {
        // An abandoned request must complete before its buffer goes (an error path: the job is ending).
        if request != nil { _ = try? wait() }
        storage.deallocate()
    }

    /// The result, once every rank has contributed.
    ///
    /// - Parameter bounded: abort the job past the communicator's timeout; false waits as long as it takes (for
    ///   ranks that finish long pieces of work at different times).
    /// - Throws: `DistributedError.mpiFailed`.
    public func wait(bounded: Bool = true) throws -> [T] {
        if var pending = request {
            request = nil
            try communicator.waitFor(&pending, what: what, bounded: bounded)
        }
        return Array(storage)
    }
}

/// A thread that ends the process when a blocking collective outlives its deadline.
// @unchecked Sendable: `deadline` and `line` are shared by the caller and the watchdog thread under `lock` only.
final class Watchdog: @unchecked Sendable {
    private let lock = NSLock()
    private var deadline: Date?
    private var line = ""

    init() {
        let thread = Thread { [weak self] in
            while let self {
                self.lock.lock()
                let expired = self.deadline.map { Date() > $0 } ?? false
                let line = self.line
                self.lock.unlock()
                if expired {
                    FileHandle.standardError.write(Data((line + "\n").utf8))
                    _exit(1)
                }
                usleep(100_000)
            }
        }
        thread.name = "slicelab-mpi-watchdog"
        thread.start()
    }

    func arm(seconds: Double, line: String) {
        lock.lock()
        (deadline, self.line) = (Date().addingTimeInterval(seconds), line)
        lock.unlock()
    }

    func disarm() {
        lock.lock()
        deadline = nil
        lock.unlock()
    }
}
