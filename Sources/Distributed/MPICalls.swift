import CMPI
import Foundation
import SliceLabSupport

// MARK: - The raw MPI calls of this target, each turning MPI's status into a thrown `DistributedError`.

/// Throws `DistributedError.mpiFailed` unless `code` is MPI_SUCCESS.
func check(_ code: Int32, _ call: String) throws {
    guard code != cmpi_success() else { return }
    var buffer = [CChar](repeating: 0, count: Int(cmpi_max_error_string()) + 1)
    cmpi_error_string(code, &buffer)
    throw DistributedError.mpiFailed(call: call, code: code, message: String(nulTerminated: buffer))
}

enum MPICalls {
    /// Initialises MPI once (funneled: only the thread that trains calls MPI) and makes errors return instead of
    /// aborting. Rests on `MPI_Init_thread` and `MPI_Comm_set_errhandler`.
    static func initialize() throws -> (rank: Int, size: Int) {
        var initialized: Int32 = 0
        try check(MPI_Initialized(&initialized), "MPI_Initialized")
        if initialized == 0 {
            var provided: Int32 = 0
            try check(MPI_Init_thread(nil, nil, cmpi_thread_funneled(), &provided), "MPI_Init_thread")
        }
        try check(MPI_Comm_set_errhandler(cmpi_comm_world(), cmpi_errors_return()), "MPI_Comm_set_errhandler")
        var rank: Int32 = 0
        var size: Int32 = 0
        try check(MPI_Comm_rank(cmpi_comm_world(), &rank), "MPI_Comm_rank")
        try check(MPI_Comm_size(cmpi_comm_world(), &size), "MPI_Comm_size")
        return (Int(rank), Int(size))
    }

    /// Rests on `MPI_Finalize`.
    static func finalize() {
        var finalized: Int32 = 0
        MPI_Finalized(&finalized)
        if finalized == 0 { MPI_Finalize() }
    }

    /// Ends every rank of the job with `code`. Rests on `MPI_Abort`.
    static func abort(code: Int32) -> Never {
        MPI_Abort(cmpi_comm_world(), code)
        exit(code)
    }

    /// Sums over all ranks, in place, returning when done. Rests on `MPI_Allreduce`.
    static func allReduce(_ buffer: UnsafeMutableRawPointer, count: Int, double: Bool) throws {
        try check(
            MPI_Allreduce(
                cmpi_in_place(), buffer, Int32(count), double ? cmpi_double() : cmpi_float(),
                cmpi_sum(), cmpi_comm_world()), "MPI_Allreduce")
    }

    /// Starts a sum over all ranks, in place. Rests on `MPI_Iallreduce`.
    static func startAllReduce(_ buffer: UnsafeMutableRawPointer, count: Int, double: Bool) throws -> RequestHandle {
        var request: RequestHandle = cmpi_request_null()
        try check(
            MPI_Iallreduce(
                cmpi_in_place(), buffer, Int32(count), double ? cmpi_double() : cmpi_float(),
                cmpi_sum(), cmpi_comm_world(), &request), "MPI_Iallreduce")
        return request
    }

    /// Starts a broadcast of `count` floats from `root`. Rests on `MPI_Ibcast`.
    static func startBroadcast(_ buffer: UnsafeMutableRawPointer, count: Int, root: Int) throws -> RequestHandle {
        var request: RequestHandle = cmpi_request_null()
        try check(
            MPI_Ibcast(buffer, Int32(count), cmpi_float(), Int32(root), cmpi_comm_world(), &request),
            "MPI_Ibcast")
        return request
    }

    /// Starts a barrier. Rests on `MPI_Ibarrier`.
    static func startBarrier() throws -> RequestHandle {
        var request: RequestHandle = cmpi_request_null()
        try check(MPI_Ibarrier(cmpi_comm_world(), &request), "MPI_Ibarrier")
        return request
    }

    /// Whether `request` has completed (driving MPI's progress). Rests on `MPI_Test`.
    static func test(_ request: inout RequestHandle) throws -> Bool {
        var flag: Int32 = 0
        try check(MPI_Test(&request, &flag, cmpi_status_ignore()), "MPI_Test")
        return flag != 0
    }
}

/// An MPI request of this target's collectives, opaque to callers.
typealias RequestHandle = MPI_Request?
