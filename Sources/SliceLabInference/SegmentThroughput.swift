import DeepLab
import Foundation

/// What `segment --timings` reports: slices per second, the multiply-adds the network did, the rate achieved in
/// the forward passes against the peak of oneDNN's effective ISA, and the process's peak resident memory.
public struct SegmentThroughput: Sendable {
    public var slices: Int
    public var batch: Int
    public var forwards: Int
    /// Wall-clock seconds of the whole run (reading, preprocessing, forwards, writing).
    public var seconds: Double
    /// Wall-clock seconds inside the forward passes.
    public var forwardSeconds: Double
    /// The convolutions' multiply-adds, counted as the direct algorithm does them (`DeepLabV3.multiplyAddCount`).
    public var multiplyAdds: Int
    public var precision: Precision
    public var peak: ComputePeak
    /// The process's peak resident set in bytes (`VmHWM`), nil where /proc/self/status is not readable.
    public var peakResidentBytes: Int?
    /// Each convolution unit's costs (`LayerProfile`), names prefixed by the member for an ensemble; empty when
    /// not profiled.
    public var layers: [LayerProfile] = []
    /// The same for the forwards' other operations (`DeepLabV3.operationProfiles`).
    public var operations: [LayerProfile] = []
    /// Bytes per second this machine copies with the compute threads (`measuredMemoryBandwidth`), for the
    /// roofline; nil when not measured.
    public var memoryBandwidth: Double?

    /// Achieved operations per second in the forward passes: 2 × multiply-adds / forward seconds.
    public var achievedOperationsPerSecond: Double {
        forwardSeconds > 0 ? 2 * Double(multiplyAdds) / forwardSeconds : 0
    }

    /// The report's lines.
    public var lines: [String] {
        let unit = precision == .int8 ? "TOPS" : "TFLOP/s"
        let perSecond = { (slices: Int, seconds: Double) in seconds > 0 ? Double(slices) / seconds : 0 }
        var lines = [
            "timings: \(slices) slice(s) in \(fixed(seconds, 2)) s, \(fixed(perSecond(slices, seconds), 3)) slices/s; "
                + "\(forwards) forward pass(es) of batch \(batch) took \(fixed(forwardSeconds, 2)) s "
                + "(\(fixed(perSecond(slices, forwardSeconds), 3)) slices/s)",
            "timings: \(multiplyAdds) multiply-adds (\(fixed(Double(multiplyAdds) / 1e9, 1)) G), achieved "
                + "\(fixed(achievedOperationsPerSecond / 1e12, 3)) \(unit) \(precision.rawValue) against the peak "
                + "\(fixed(peak.operationsPerSecond(precision) / 1e12, 3)) \(unit) (oneDNN ISA \(peak.isa): "
                + "\(peak.description(precision)))"
        ]
        if let bytes = peakResidentBytes {
            lines.append("timings: peak RSS \(fixed(Double(bytes) / 1_048_576, 1)) MB")
        }
        return lines + rooflineLines
    }

    /// Adds the roofline: the layer profiles of `members` (named by member when there are several) and this
    /// machine's memory bandwidth, measured now with the compute threads.
    public mutating func addRoofline(_ members: [DeepLabV3]) {
        func named(_ profiles: (DeepLabV3) -> [LayerProfile]) -> [LayerProfile] {
            members.enumerated().flatMap { index, member in
                profiles(member).map { layer in
                    var layer = layer
                    if members.count > 1 { layer.name = "m\(index + 1):" + layer.name }
                    return layer
                }
            }
        }
        layers = named(\.layerProfiles)
        operations = named(\.operationProfiles)
        memoryBandwidth = measuredMemoryBandwidth(threads: peak.threads)
    }

    /// Per convolution, in forward order, over the run with primitive creation left out (`LayerProfile.seconds`):
    /// its time and share of the convolutions', its multiply-adds and bytes moved, and the limit it is nearer on
    /// this machine's
    /// roofline — memory (bytes over the measured bandwidth) or compute (multiply-adds on taps inside the input
    /// over the ISA's peak) — with the share of the measured time that limit accounts for (100 % is at the
    /// roofline, at the clock measured on the threads). Then the forwards'
    /// other operations (resizes, joins, pooling), each with its share of the forwards' time and its traffic.
    public var rooflineLines: [String] {
        guard !layers.isEmpty, let bandwidth = memoryBandwidth, bandwidth > 0 else { return [] }
        let peakMultiplyAdds = peak.operationsPerSecond(precision) / 2
        let total = layers.reduce(0) { $0 + $1.seconds }
        let setup = layers.reduce(0) { $0 + $1.setupSeconds }
        var lines = [
            "timings: roofline per convolution (memory \(fixed(bandwidth / 1e9, 1)) GB/s, measured copying 256 MiB "
                + "with \(peak.threads) thread(s); compute \(fixed(2 * peakMultiplyAdds / 1e12, 3)) "
                + "\(precision == .int8 ? "TOPS" : "TFLOP/s") \(precision.rawValue) peak): convolutions "
                + "\(fixed(total, 2)) s of the forwards' \(fixed(forwardSeconds, 2)) s, leaving out primitive "
                + "creation and each unit's first call's preparation (\(fixed(setup, 2)) s more)",
            "timings:       ms  share     GMAC  MB moved  MAC/B  limit    at  strategy  layer"
        ]
        // A row: its time and share (of the convolutions' time, or for another operation of the forwards'), its
        // work, traffic and the nearer limit.
        func row(_ layer: LayerProfile, share whole: Double) -> String {
            let seconds = layer.seconds
            let memory = layer.bytes / bandwidth
            let compute = peakMultiplyAdds > 0 ? Double(layer.multiplyAddsInside) / peakMultiplyAdds : 0
            let kernels = layer.implementations.isEmpty ? "" : " (\(layer.implementations.joined(separator: ", ")))"
            return "timings: "
                + [
                    pad(fixed(seconds * 1000, 1), 8),
                    pad(fixed(whole > 0 ? 100 * seconds / whole : 0, 1) + "%", 6),
                    pad(fixed(Double(layer.multiplyAddsInside) / 1e9, 3), 8),
                    pad(fixed(layer.bytes / 1_048_576, 1), 9),
                    pad(fixed(layer.intensity, 1), 6), memory >= compute ? "memory " : "compute",
                    pad(fixed(seconds > 0 ? 100 * max(memory, compute) / seconds : 0, 0) + "%", 4),
                    " \(layer.strategy)\(kernels)  \(layer.name)"
                ].joined(separator: " ")
        }
        lines += layers.map { row($0, share: total) }
        if !operations.isEmpty {
            let other = operations.reduce(0) { $0 + $1.seconds }
            lines.append(
                "timings: other operations \(fixed(other, 2)) s (share of the forwards' time; no multiply-adds), "
                    + "the rest of the forwards' time (\(fixed(max(0, forwardSeconds - total - other), 2)) s) between them"
            )
            lines += operations.map { row($0, share: forwardSeconds) }
        }
        return lines
    }

    /// The peak resident set of this process in bytes (`VmHWM` of /proc/self/status), nil when unreadable.
    public static func peakResidentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes * 1024
    }

    public init(
        slices: Int, batch: Int, forwards: Int, seconds: Double, forwardSeconds: Double, multiplyAdds: Int,
        precision: Precision, peak: ComputePeak, peakResidentBytes: Int?
    ) {
        self.slices = slices
        self.batch = batch
        self.forwards = forwards
        self.seconds = seconds
        self.forwardSeconds = forwardSeconds
        self.multiplyAdds = multiplyAdds
        self.precision = precision
        self.peak = peak
        self.peakResidentBytes = peakResidentBytes
    }
}

/// The peak multiply-add rate of oneDNN's effective ISA: multiply-adds per cycle per core × threads × clock.
///
/// Per cycle per core, from the instructions oneDNN's kernels issue and two vector multiply pipes per core (the
/// issue's two CPUs: AMD EPYC Zen, Intel Xeon with two 512-bit FMA units; Xeons with one are at half):
/// - fp32: AVX2 2 × 8 `vfmadd` lanes = 16; AVX-512 2 × 16 = 32; AMX is fp32 at AVX-512's rate.
/// - int8 without VNNI: `vpmaddubsw` multiplies 32 (AVX2) or 64 (AVX-512) u8 · s8 pairs and `vpmaddwd` widens
///   the pair sums, both on the multiply pipes: 2 instructions per 32 (64) multiply-adds, so 32 (AVX2) or 64
///   (AVX-512) a cycle.
/// - int8 with VNNI: `vpdpbusd` does 32 (AVX2-VNNI) or 64 (AVX-512) in one instruction, 2 a cycle: 64 or 128.
/// - AMX: `tdpbssd` is 16 × 16 × 64 = 16384 multiply-adds every 16 cycles = 1024 int8 a cycle; `tdpbf16ps`
///   16 × 16 × 32 every 16 cycles = 512 bf16. AVX-512 BF16 without AMX: `vdpbf16ps` 2 × 32 = 64.
/// References: Intel 64 and IA-32 Architectures Optimization Reference Manual (AMX chapter: TMUL throughput),
/// oneDNN's int8 guide (`vpmaddubsw` saturation), uops.info for the pipes.
///
/// The clock is measured on the compute threads while busy (`measuredGigahertz`): /proc/cpuinfo's "cpu MHz" is the
/// nominal clock in a VM, not the boosted one the kernels run at (a lower AVX-512 clock under the vector units' load
/// still moves the true peak).
public struct ComputePeak: Sendable {
    /// oneDNN's effective ISA ("AVX2", "AVX512_CORE_AMX", …).
    public var isa: String
    public var threads: Int
    public var gigahertz: Double
    /// True: `gigahertz` was measured on this machine (`current`); false: given.
    public var clockIsMeasured = false

    /// The peak for oneDNN's ISA on this machine with `threads` compute threads, at the clock they run at (2 GHz,
    /// not measured, where it cannot be measured: off x86-64).
    public static func current(threads: Int) -> ComputePeak {
        let measured = measuredGigahertz(threads: threads)
        return ComputePeak(
            isa: oneDNNEffectiveISA, threads: threads, gigahertz: measured ?? 2, clockIsMeasured: measured != nil)
    }

    /// Multiply-adds per cycle per core of `precision` on `isa`.
    public static func multiplyAddsPerCycle(isa: String, precision: Precision) -> Int {
        let avx512 = isa.hasPrefix("AVX512")
        let amx = isa.contains("AMX")
        let vnni = isa.contains("VNNI") || isa.contains("BF16") || amx
        switch precision {
        case .fp32: return avx512 ? 32 : 16
        case .int8:
            if amx { return 1024 }
            if avx512 { return vnni ? 128 : 64 }
            return vnni ? 64 : 32
        case .bf16:
            if amx { return 512 }
            return isa.contains("BF16") ? 64 : 0
        }
    }

    /// Peak operations (2 per multiply-add) per second of `precision`.
    public func operationsPerSecond(_ precision: Precision) -> Double {
        2 * Double(Self.multiplyAddsPerCycle(isa: isa, precision: precision) * threads) * gigahertz * 1e9
    }

    /// "16 fp32 multiply-adds per cycle per core × 2 thread(s) × 3.61 GHz (measured on the threads, busy)".
    public func description(_ precision: Precision) -> String {
        "\(Self.multiplyAddsPerCycle(isa: isa, precision: precision)) \(precision.rawValue) multiply-adds per cycle "
            + "per core × \(threads) thread(s) × \(fixed(gigahertz, 2)) GHz"
            + (clockIsMeasured ? " (measured on the threads, busy)" : " (assumed, not measured)")
    }
}

/// `value` with `digits` decimals.
private func fixed(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }

/// `text` right-aligned in `width` characters.
private func pad(_ text: String, _ width: Int) -> String {
    String(repeating: " ", count: max(0, width - text.count)) + text
}
