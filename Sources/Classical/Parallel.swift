import Dispatch

/// Splits index ranges across the machine's cores (`DispatchQueue.concurrentPerform`) when the work is large
/// enough to pay for it; small inputs run inline.
enum Parallel {
    /// The number of chunks for `count` items of which each chunk should hold at least `minimumChunk`.
    ///
    /// It does not depend on the machine's core count, so sums combined per chunk (k-means centres, inertia)
    /// round the same way everywhere and a seed reproduces a run bit for bit on any machine.
    static func chunkCount(_ count: Int, minimumChunk: Int) -> Int {
        max(1, min(64, count / max(minimumChunk, 1)))
    }

    /// Calls `body(chunk, range)` for every chunk of `0..<count`, concurrently when there is more than one.
    /// Chunks are contiguous, ascending and cover every index once; results written per chunk are combined by
    /// the caller in chunk order, so results do not depend on scheduling.
    static func forEachChunk(_ count: Int, minimumChunk: Int = 4096,
                             _ body: (_ chunk: Int, _ range: Range<Int>) -> Void) -> Int {
        let chunks = chunkCount(count, minimumChunk: minimumChunk)
        let range = { (chunk: Int) -> Range<Int> in
            (chunk * count / chunks)..<((chunk + 1) * count / chunks)
        }
        if chunks == 1 {
            body(0, 0..<count)
        } else {
            DispatchQueue.concurrentPerform(iterations: chunks) { body($0, range($0)) }
        }
        return chunks
    }

    /// The number of chunks `forEachChunk` will use, for sizing per-chunk result buffers first.
    static func plannedChunks(_ count: Int, minimumChunk: Int = 4096) -> Int {
        chunkCount(count, minimumChunk: minimumChunk)
    }
}
