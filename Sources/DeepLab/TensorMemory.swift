import Foundation

/// The memory tensors live in.
///
/// Large buffers (128 KiB and up) are mapped from the system directly, and a freed one is kept for the next tensor
/// of the same size, up to `idleLimit` bytes in all (or, once `keepWorkingSet()` was called, up to
/// `workingSetFactor` times the most bytes ever live at once in large buffers, when that is more); beyond that
/// the oldest idle buffers go back to the system at once.
/// Tensor sizes repeat from layer to layer and from step to step, so most large tensors reuse a buffer instead
/// of faulting in fresh pages; and freed memory does not linger, as it does in glibc's heap, where
/// fragmentation kept DeepLabV3-ResNet-50's peak resident memory about 50 % above its live tensors (training,
/// batch 4 × 3 × 256²: 3.2 GB against 2.1 GB). Small buffers come from `posix_memalign`.
// @unchecked Sendable: the idle lists and byte counts are read and written under `lock` only.
final class TensorMemory: @unchecked Sendable {
    static let shared = TensorMemory()

    /// Buffers from this size up are mapped and reused: glibc's own mmap threshold, above which `posix_memalign`
    /// would map a fresh block, faulted in page by page, on every pass (at 1 MiB, the bundled DeepLabV3+ model's
    /// 3-D volume faulted in 74 000 pages, blocks 8–9's 671 KB expansion taking 3 × block 10's time at the same
    /// shape; 34 000 at 128 KiB).
    static let largeSize = 128 << 10
    /// After `keepWorkingSet()`, idle bytes may reach this many times the peak of live large bytes. Buffers are
    /// reused by exact size, so one pass needs more buffers than are live at any moment: batched inference of
    /// 512² slices (MobileNetV2, batch 8) unmapped and faulted in its buffers afresh on every pass with a limit
    /// of 256 MiB or of twice the peak, which took more than half its time (40 slices: 158 s and 102 s, against
    /// 67 s with a factor of 4, peak RSS 1084 MB against 910 MB), and so did batch 1 on large inputs: the bundled
    /// mni-brain model at input scale 4 (932 × 788, ASPP's rectangles in many sizes) faulted in 174 000 pages a
    /// pass with 256 MiB (about 1.03 s a pass), 27 000 with 4 (0.67–0.72 s) and none with 8 (0.61–0.63 s); peak
    /// RSS 863 MB with 4 or 8 (538 MB with 256 MiB), and batch 8 at 512² peaks at 1504 MB with either. Idle
    /// memory stays bounded by this factor when input sizes vary. Inference and training ask for it
    /// (`TensorMemoryPolicy`). Training first did not: DeepLabV3-ResNet-50 at batch 4 × 256² and input scale 1
    /// gained no time with a factor of 4 and peaked 14 % higher (2677 MB against 2357 MB); but the bundled
    /// DeepLabV3+ configuration (batch 4 × 128² at input scale 2) faulted in 2.2 million pages in 12 steps without
    /// it and stepped in 0.62 × the time with it (253 k faults; peak RSS 957 against 839 MB, factors 2 to 8 alike),
    /// and ResNet-50 at the plan's scale for 256² crops in 0.74–0.83 × (15.6 against 12.6 GB).
    static let workingSetFactor = 8
    /// The most idle bytes kept for reuse (more after `keepWorkingSet()`, see above).
    let idleLimit: Int

    private let lock = NSLock()
    /// Idle buffers, oldest first (the newest of a size is reused; the oldest are evicted).
    private var idle: [(size: Int, pointer: UnsafeMutableRawPointer)] = []
    private var idleBytes = 0
    /// Bytes of large buffers handed out and not yet released, and their high-water mark.
    private var liveBytes = 0, peakLiveBytes = 0
    /// Whether `keepWorkingSet()` was called.
    private var keepsWorkingSet = false
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    init(idleLimit: Int = 256 << 20) {
        self.idleLimit = idleLimit
    }

    /// The bytes a request of `bytes` really takes (large buffers are whole pages).
    static func footprint(_ bytes: Int) -> Int {
        bytes < largeSize ? bytes : (bytes + pageSize - 1) / pageSize * pageSize
    }

    /// A buffer of at least `bytes` bytes, aligned to 64 bytes; nil when the system has no memory for it.
    func allocate(_ bytes: Int) -> UnsafeMutableRawPointer? {
        let size = Self.footprint(max(bytes, 1))
        guard size >= Self.largeSize else {
            var pointer: UnsafeMutableRawPointer?
            return posix_memalign(&pointer, 64, size) == 0 ? pointer : nil
        }
        lock.lock()
        defer { lock.unlock() }
        var pointer: UnsafeMutableRawPointer
        if let index = idle.lastIndex(where: { $0.size == size }) {
            pointer = idle.remove(at: index).pointer
            idleBytes -= size
        } else {
            let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            guard let mapped, mapped != MAP_FAILED else { return nil }
            pointer = mapped
        }
        liveBytes += size
        peakLiveBytes = max(peakLiveBytes, liveBytes)
        return pointer
    }

    /// Returns a buffer `allocate(bytes)` gave.
    func release(_ pointer: UnsafeMutableRawPointer, bytes: Int) {
        let size = Self.footprint(max(bytes, 1))
        guard size >= Self.largeSize else { return free(pointer) }
        var evicted: [(size: Int, pointer: UnsafeMutableRawPointer)] = [(size, pointer)]
        lock.lock()
        liveBytes -= size
        let limit = keepsWorkingSet ? max(idleLimit, Self.workingSetFactor * peakLiveBytes) : idleLimit
        if size <= limit {
            idle.append(evicted.removeLast())
            idleBytes += size
            while idleBytes > limit {
                let oldest = idle.removeFirst()
                idleBytes -= oldest.size
                evicted.append(oldest)
            }
        }
        lock.unlock()
        for buffer in evicted { munmap(buffer.pointer, buffer.size) }
    }

    /// Keeps idle up to `workingSetFactor` times the peak of live large bytes from now on (inference, training).
    func keepWorkingSet() {
        lock.lock()
        keepsWorkingSet = true
        lock.unlock()
    }

    /// Idle bytes held for reuse (for tests).
    var idleByteCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return idleBytes
    }
}

/// How the engine keeps tensor memory between passes.
public enum TensorMemoryPolicy {
    /// Keeps a pass's buffers mapped for the next one even beyond the fixed idle bound (see `TensorMemory`), for
    /// a process that runs inference passes (`segment`, `compare`, parity mode) or training steps.
    public static func keepWorkingSet() { TensorMemory.shared.keepWorkingSet() }
}
