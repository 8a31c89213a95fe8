import CCPUClock
import Foundation
import SliceLabSupport

/// What one convolution unit cost over the eval-mode forwards since profiling was switched on: the strategy that
/// computed it and oneDNN's kernels, its time, its multiply-adds (counted as the direct algorithm does them) and
/// the bytes its primitives read and wrote (every argument of every primitive it executed, each once: the
/// compulsory traffic, not counting what caches absorb or re-reads within a kernel).
///
/// Creating primitives (oneDNN compiles its kernels then) is timed apart and left out; a unit's first call also
/// prepares its weights, so with more than one call the time and bytes are the later calls', scaled to every
/// call's multiply-adds, and creation with the first call's excess over that is `setupSeconds`.
public struct LayerProfile: Sendable {
    /// The unit's `state_dict` prefix (`backbone.3.conv.1.0`).
    public var name: String
    /// `direct`, `winograd`, `padding-free`, `int8` or `bf16`, and oneDNN's convolution kernels (`brg:avx512_core`).
    public var strategy: String
    public var implementations: [String]
    /// One call's costs, summed over calls.
    public struct Costs: Sendable {
        public var calls = 0
        public var seconds = 0.0
        public var multiplyAdds = 0
        public var bytes = 0
    }
    /// The multiply-adds on taps that read the input (padding taps left out): the work a kernel that skips
    /// padding does, and the roofline's compute figure.
    public private(set) var multiplyAddsInside = 0
    var first = Costs()
    var later = Costs()
    var creationSeconds = 0.0

    public var calls: Int { first.calls + later.calls }
    public var multiplyAdds: Int { first.multiplyAdds + later.multiplyAdds }
    /// The later calls' share of the work (of the calls, for an operation without multiply-adds), by which their time
    /// and bytes are scaled to all calls.
    private var scale: Double {
        later.multiplyAdds > 0
            ? Double(multiplyAdds) / Double(later.multiplyAdds)
            : later.calls > 0 ? Double(calls) / Double(later.calls) : 1
    }
    /// Every call's time, had the first been as fast as the later ones (the first's own with one call).
    public var seconds: Double { later.calls > 0 ? later.seconds * scale : first.seconds }
    /// Every call's bytes moved, as `seconds` counts them.
    public var bytes: Double { later.calls > 0 ? Double(later.bytes) * scale : Double(first.bytes) }
    /// Primitive creation, and the first call's time beyond its share at the later calls' rate.
    public var setupSeconds: Double {
        creationSeconds + (later.calls > 0 ? max(0, first.seconds + later.seconds - seconds) : 0)
    }
    /// Multiply-adds inside the input per byte moved.
    public var intensity: Double { bytes > 0 ? Double(multiplyAddsInside) / bytes : 0 }

    /// Kernel taps of one spatial dimension, summed over its `outputs` positions, that read one of the `size`
    /// input positions rather than padding.
    static func tapsInside(_ size: Int, _ outputs: Int, _ kernel: Int, _ stride: Int, _ padding: Int, _ dilation: Int)
        -> Int
    {
        var count = 0
        for o in 0..<outputs {
            for t in 0..<kernel where (0..<size).contains(o * stride - padding + t * dilation) { count += 1 }
        }
        return count
    }

    /// One call: its time without `creation`, the primitive creation inside it; `inside` of its multiply-adds
    /// read the input.
    mutating func record(seconds: Double, creation: Double = 0, multiplyAdds: Int, inside: Int? = nil, bytes: Int) {
        creationSeconds += creation
        multiplyAddsInside += inside ?? multiplyAdds
        let seconds = max(0, seconds - creation)
        if first.calls == 0 {
            first = Costs(calls: 1, seconds: seconds, multiplyAdds: multiplyAdds, bytes: bytes)
        } else {
            later.calls += 1
            later.seconds += seconds
            later.multiplyAdds += multiplyAdds
            later.bytes += bytes
        }
    }
}

/// Per-unit profiling of eval-mode forwards (`segment --timings`), on only inside `DeepLabV3.profilingLayers`
/// and only for the work that runs there (task-local, so other work in the process is neither timed nor mixed
/// in): each unit's time around its strategy, and the primitives executed meanwhile (their arguments' bytes and
/// their kernels).
enum LayerProfiling {
    /// The primitives the running unit executed: bytes of their arguments and the convolutions' kernels.
    struct Collected {
        var bytes = 0
        var implementations: Set<String> = []
        var creationSeconds = 0.0
    }

    @TaskLocal static var enabled = false
    /// While a unit runs under profiling, what its primitives add.
    @TaskLocal static var collector: Locked<Collected>?
    /// While a model's eval-mode forward runs under profiling, where its operations other than convolutions go.
    @TaskLocal static var operations: OperationProfiles?

    /// `body`, an operation other than a convolution (a resize, a join, a pooling) named `name` and of kind
    /// `kind`, timed into the running forward's `operations` when profiling; its bytes what its primitives moved, and
    /// at least `bytes(result)` (what it reads and writes).
    static func operation<T>(_ name: String, _ kind: String, bytes: (T) -> Int, _ body: () throws -> T) rethrows -> T {
        guard enabled, let operations else { return try body() }
        let (result, seconds, collected) = try measure(body)
        operations.record(
            name, kind, seconds: seconds, creation: collected.creationSeconds,
            bytes: max(collected.bytes, bytes(result)))
        return result
    }

    /// Called by `Primitive.execute` with its arguments' bytes and, for a convolution, its kernel.
    static func note(bytes: Int, implementation: () -> String?) {
        collector?.withLock {
            $0.bytes += bytes
            if let implementation = implementation() { $0.implementations.insert(implementation) }
        }
    }

    /// Called by `Primitive.init` with the time creating it took.
    static func noteCreation(seconds: Double) { collector?.withLock { $0.creationSeconds += seconds } }

    /// `body` timed, with what its primitives executed.
    static func measure<T>(_ body: () throws -> T) rethrows -> (T, seconds: Double, Collected) {
        let box = Locked(Collected())
        let start = DispatchTime.now().uptimeNanoseconds
        let result = try $collector.withValue(box) { try body() }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return (result, seconds, box.withLock { $0 })
    }
}

/// A model's operations other than convolutions over its profiled eval-mode forwards (`LayerProfiling.operation`):
/// a `LayerProfile` each, without multiply-adds, in the order they first ran.
final class OperationProfiles: Sendable {
    private let state = Locked<(order: [String], profiles: [String: LayerProfile])>(([], [:]))

    func record(_ name: String, _ kind: String, seconds: Double, creation: Double, bytes: Int) {
        state.withLock { state in
            if state.profiles[name] == nil { state.order.append(name) }
            state.profiles[name, default: LayerProfile(name: name, strategy: kind, implementations: [])].record(
                seconds: seconds, creation: creation, multiplyAdds: 0, bytes: bytes)
        }
    }

    var profiles: [LayerProfile] { state.withLock { state in state.order.compactMap { state.profiles[$0] } } }

    func reset() { state.withLock { $0 = ([], [:]) } }
}

/// Sustained memory bandwidth of this machine with `threads` threads: the best of five parallel copies of
/// 256 MiB (far beyond any cache), counting the bytes read and written. `segment --timings` measures it once a
/// run, so the roofline's memory limit is this machine's, not a datasheet's.
public func measuredMemoryBandwidth(threads: Int) -> Double {
    let bytes = 256 << 20
    let chunks = max(1, threads)
    let source = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
    let target = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
    defer {
        source.deallocate()
        target.deallocate()
    }
    memset(source, 1, bytes)
    memset(target, 0, bytes)
    var best = Double.infinity
    for _ in 0..<5 {
        let start = DispatchTime.now().uptimeNanoseconds
        Parallel.forEach(chunks) { chunk in
            let range = (chunk * bytes / chunks)..<((chunk + 1) * bytes / chunks)
            memcpy(target + range.lowerBound, source + range.lowerBound, range.count)
        }
        best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
    return 2 * Double(bytes) / best
}

/// The cores' clock while busy, in GHz, as the forwards' `threads` threads run: each times a chain of dependent
/// multiplications (`cclock_multiply_chain`, 3 cycles each), best of three, and the slowest thread's rate is kept; nil
/// off x86-64. In a VM /proc/cpuinfo's "cpu MHz" is the nominal clock, not the boosted one the kernels run at (an AMD
/// EPYC Zen 5 reports 2.6 GHz and runs at 3.6–3.8). About 10 ms a thread at 4 GHz.
public func measuredGigahertz(threads: Int, multiplications: Int64 = 12_000_000) -> Double? {
    let rates = Locked([Double]())
    Parallel.forEach(max(1, threads)) { _ in
        var best = Double.infinity
        for _ in 0..<3 {
            let start = DispatchTime.now().uptimeNanoseconds
            guard cclock_multiply_chain(multiplications) == 0 else { return }
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        rates.withLock { $0.append(3 * Double(multiplications) / best / 1e9) }
    }
    return rates.withLock { $0.count == max(1, threads) ? $0.min() : nil }
}
