// The compute threads: oneDNN's OpenMP runtime (Debian builds oneDNN with OpenMP), reached with `dlsym` because
// libgomp comes in through libdnnl rather than being linked directly. General parallel-for (not on oneDNN's
// threads) is `SliceLabSupport.Parallel`.
import Foundation
import SliceLabSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Sets the number of compute threads of oneDNN's OpenMP runtime. Rests on `omp_set_num_threads`.
public func setComputeThreads(_ count: Int) {
    guard count >= 1 else { return }
    OpenMP.setMaximumThreads?(Int32(count))
}

/// The number of compute threads oneDNN will use (OpenMP's maximum). Rests on `omp_get_max_threads`.
public func computeThreads() -> Int {
    OpenMP.maximumThreads.map { Int($0()) } ?? 1
}

/// Runs `body(worker, workers)` once on each of oneDNN's OpenMP compute threads and waits for all: work done
/// between oneDNN primitives then shares their threads instead of competing with them for the cores (OpenMP's
/// idle threads spin for a while after each primitive). Without libgomp's entry point it runs on Dispatch's
/// threads instead. Rests on `GOMP_parallel`, `omp_get_thread_num`, `omp_get_num_threads`.
func parallelWorkers(_ body: (Int, Int) -> Void) {
    guard let parallel = OpenMP.parallel, let thread = OpenMP.threadNumber, let threads = OpenMP.threadCount else {
        let workers = max(1, computeThreads())
        withoutActuallyEscaping(body) { body in
            let body = ConcurrentBody(body)
            DispatchQueue.concurrentPerform(iterations: workers) { body.call($0, workers) }
        }
        return
    }
    withoutActuallyEscaping(body) { body in
        var context = OpenMP.Context(body: body, thread: thread, threads: threads)
        withUnsafeMutablePointer(to: &context) { pointer in
            parallel(
                { raw in
                    let context = raw!.assumingMemoryBound(to: OpenMP.Context.self).pointee
                    context.body(Int(context.thread()), Int(context.threads()))
                }, pointer, 0, 0)  // 0 threads: the default team, as for oneDNN's own regions
        }
    }
}

/// Runs `body` on contiguous slices of `range`, one per compute thread (`parallelWorkers`); on the whole range,
/// on the calling thread, when it has fewer than `minimum` elements.
package func forEachSlice(of range: Range<Int>, minimum: Int = 1, _ body: (Range<Int>) -> Void) {
    guard range.count >= minimum else { return body(range) }
    parallelWorkers { worker, workers in
        let start = { range.lowerBound + range.count * $0 / workers }
        body(start(worker)..<start(worker + 1))
    }
}

/// Runs `body` for every element of `range`, the range split among the compute threads.
package func concurrentForEach(_ range: Range<Int>, _ body: (Int) -> Void) {
    forEachSlice(of: range) { $0.forEach(body) }
}

/// libgomp's entry points, looked up once.
private enum OpenMP {
    typealias Region = @convention(c) (UnsafeMutableRawPointer?) -> Void
    typealias Parallel = @convention(c) (Region, UnsafeMutableRawPointer?, UInt32, UInt32) -> Void
    typealias Query = @convention(c) () -> Int32
    typealias Setter = @convention(c) (Int32) -> Void

    static let setMaximumThreads = dlsym(nil, "omp_set_num_threads").map { unsafeBitCast($0, to: Setter.self) }
    static let maximumThreads = dlsym(nil, "omp_get_max_threads").map { unsafeBitCast($0, to: Query.self) }
    static let parallel = dlsym(nil, "GOMP_parallel").map { unsafeBitCast($0, to: Parallel.self) }
    static let threadNumber = dlsym(nil, "omp_get_thread_num").map { unsafeBitCast($0, to: Query.self) }
    static let threadCount = dlsym(nil, "omp_get_num_threads").map { unsafeBitCast($0, to: Query.self) }

    /// What each thread of a `parallelWorkers` region receives.
    struct Context {
        let body: (Int, Int) -> Void
        let thread: Query
        let threads: Query
    }
}
