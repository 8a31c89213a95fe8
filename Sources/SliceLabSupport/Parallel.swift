import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Work split across the machine's cores (`DispatchQueue.concurrentPerform`) when it is large enough to pay
/// for it; small inputs run inline. The engine's oneDNN-thread team (`DeepLab`'s compute threads) is separate:
/// it runs work between oneDNN primitives on oneDNN's own OpenMP threads.
public enum Parallel {
    /// The processors this process may use. Rests on `sysconf(_SC_NPROCESSORS_ONLN)`.
    public static var processorCount: Int {
        #if canImport(Glibc)
            return max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        #else
            return 1
        #endif
    }

    /// Calls `body(index)` for every index in `0..<count`, concurrently when `count` > 1.
    public static func forEach(_ count: Int, _ body: (Int) -> Void) {
        if count == 1 {
            body(0)
        } else if count > 1 {
            withoutActuallyEscaping(body) { body in
                let body = ConcurrentBody(body)
                DispatchQueue.concurrentPerform(iterations: count) { body.call($0) }
            }
        }
    }

    /// `body(index)` for every index in `0..<count`, concurrently when `count` > 1, the results in index order; the
    /// error of the lowest failing index is rethrown (after every call has finished).
    public static func map<T>(_ count: Int, _ body: (Int) throws -> T) throws -> [T] {
        let slots = ResultSlots<T>(count: count)
        forEach(count) { index in slots.set(index, Result { try body(index) }) }
        return try slots.values()
    }

    /// The number of chunks for `count` items of which each chunk should hold at least `minimumChunk`.
    ///
    /// It does not depend on the machine's core count, so sums combined per chunk (k-means centres, inertia)
    /// round the same way everywhere and a seed reproduces a run bit for bit on any machine.
    public static func chunkCount(_ count: Int, minimumChunk: Int = 4096) -> Int {
        max(1, min(64, count / max(minimumChunk, 1)))
    }

    /// Calls `body(chunk, range)` for every chunk of `0..<count` (`chunkCount` of them), concurrently when
    /// there is more than one. Chunks are contiguous, ascending and cover every index once; results written
    /// per chunk are combined by the caller in chunk order, so results do not depend on scheduling.
    public static func forEachChunk(
        _ count: Int, minimumChunk: Int = 4096,
        _ body: (_ chunk: Int, _ range: Range<Int>) -> Void
    ) {
        let chunks = chunkCount(count, minimumChunk: minimumChunk)
        forEach(chunks) { chunk in body(chunk, (chunk * count / chunks)..<((chunk + 1) * count / chunks)) }
    }
}

/// A parallel-for's body on its way to the worker threads.
///
/// @unchecked Sendable: the closure is called concurrently, and its contract (each call touches only its own index's
/// outputs, as every `Parallel` and compute-thread body documents) is what makes that safe; Swift's types cannot say
/// so for writes through buffers. The parallel-for returns only after every call, so the closure never outlives it.
package struct ConcurrentBody<Body>: @unchecked Sendable {
    package let call: Body
    package init(_ call: Body) { self.call = call }
}

/// `Parallel.map`'s results by index.
///
/// @unchecked Sendable: each worker writes its own slot under `lock`; `values` reads them after the parallel loop
/// has joined.
private final class ResultSlots<T>: @unchecked Sendable {
    private var slots: [Result<T, any Error>?]
    private let lock = NSLock()

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ result: Result<T, any Error>) {
        lock.lock()
        slots[index] = result
        lock.unlock()
    }

    func values() throws -> [T] {
        // Every slot is set: `forEach` returns after every call.
        try slots.map { try $0!.get() }
    }
}
