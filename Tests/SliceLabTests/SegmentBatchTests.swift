import DeepLab
import Foundation
import ImageFiles
import TestSupport
import Testing

@testable import SliceLabInference
@testable import SliceLabKit

/// `segment --batch N` (issue #19): N slices per forward pass give the labels of batch 1 bit for bit and the
/// probabilities to float32 rounding, for fp32 and int8 models, whole images and tiled ones; `--timings` reports
/// throughput, the achieved rate against the ISA's peak and the peak RSS.
@Suite(.serialized) struct SegmentBatchTests {
    /// Segments the 5-slice test volume with `segmenter` at `batch`: labels and probabilities.
    static func segment(
        _ segmenter: VolumeSegmenter, _ image: NIfTIImage,
        batch: Int
    ) throws -> VolumeSegmenter.Result {
        try segmenter.segment(
            image.values, shape: [5, 16, 20], geometry: image.geometry, probabilities: true,
            batch: batch)
    }

    /// Labels equal, probabilities within 1e-5 absolute (softmax of logits that differ by float32 summation
    /// order at most).
    static func expectSame(_ a: VolumeSegmenter.Result, _ b: VolumeSegmenter.Result, _ what: String) {
        #expect(a.labels == b.labels, "\(what): labels differ")
        let p = a.probabilities ?? []
        let q = b.probabilities ?? []
        #expect(p.count == q.count && !p.isEmpty, "\(what)")
        let worst = zip(p, q).map { abs($0 - $1) }.max() ?? .infinity
        #expect(worst <= 1e-5, "\(what): probabilities differ by \(worst)")
    }

    @Test func batchOfThreeGivesBatchOnesLabelsInFp32() throws {
        let folder = try TestSupport.temporaryFolder("segment-batch")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("case.nii.gz").path
        try VolumeSegmentTests.writeVolume(input)
        let image = try NIfTIImage.read(input)
        // Context 1 (neighbours replicated at the edges) and resampling to a training spacing, with 5 slices in
        // batches of 3 (a full batch and a partial one).
        let model = try VolumeSegmentTests.model(
            in: folder, inputChannels: 3,
            sampling: SliceSampling(context: 1, spacing: [0.6, 0.6]))
        var segmenter = try VolumeSegmenter.load(checkpoint: model)
        let single = try Self.segment(segmenter, image, batch: 1)
        Self.expectSame(single, try Self.segment(segmenter, image, batch: 3), "fp32, batch 3")
        Self.expectSame(single, try Self.segment(segmenter, image, batch: 8), "fp32, batch 8 > slices")
        // Tiled: 16-pixel tiles on the 24 × 27 resampled slices run the sliding window on the batch.
        segmenter.window = SlidingWindow(tileSize: 16)
        let tiled = try Self.segment(segmenter, image, batch: 1)
        Self.expectSame(tiled, try Self.segment(segmenter, image, batch: 3), "fp32 tiled, batch 3")
    }

    @Test func batchOfThreeGivesBatchOnesLabelsInInt8() throws {
        let folder = try TestSupport.temporaryFolder("segment-batch-int8")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("case.nii.gz").path
        try VolumeSegmentTests.writeVolume(input)
        let image = try NIfTIImage.read(input)
        let path = try VolumeSegmentTests.model(in: folder)
        let segmenter = try VolumeSegmenter.load(checkpoint: path)
        // Calibrated on the volume's own slices, as `quantize` prepares them.
        let calibrator = try Calibrator(model: segmenter.model, method: .percentile)
        for z in 0..<5 {
            var values = Array(image.values[(z * 320)..<((z + 1) * 320)])
            segmenter.preprocessing.apply(to: &values)
            try calibrator.observe(FloatTensor(shape: [1, 1, 16, 20], values: values))
        }
        try segmenter.model.apply(calibrator.quantization(calibrationSet: "test", split: "train", caseCount: 1))
        #expect(segmenter.model.precision == .int8)
        let single = try Self.segment(segmenter, image, batch: 1)
        Self.expectSame(single, try Self.segment(segmenter, image, batch: 3), "int8, batch 3")
    }

    /// The CLI end to end: `--batch 3` writes the labels of `--batch 1`; `--timings` names the slices per
    /// second, the multiply-adds (the same for the same slices in any batches), the peak and the RSS, then the
    /// roofline: a row per convolution naming its strategy and the limit it is nearer.
    @Test func batchFlagWritesBatchOnesLabelsAndTimingsReportThePeak() throws {
        let folder = try TestSupport.temporaryFolder("segment-batch-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("case.nii.gz").path
        try VolumeSegmentTests.writeVolume(input)
        let model = try VolumeSegmentTests.model(in: folder)
        var outputs: [String] = []
        var multiplyAdds: [Double] = []
        for batch in [1, 3] {
            let out = folder.appendingPathComponent("labels\(batch).h5").path
            let result = try TestSupport.slicelab([
                "segment", input, "--model", model, "--out", out, "--batch",
                "\(batch)", "--timings", "--threads", "2"
            ])
            #expect(result.status == 0, "\(result.standardError)")
            let lines = result.standardError.split(separator: "\n").filter { $0.contains("timings:") }
            // The convolutions' rows, then (after their own line) the other operations'.
            let other = lines.firstIndex { $0.contains("other operations") } ?? lines.endIndex
            let rows = lines[5..<max(5, other)]
            #expect(lines.count > 5 && lines[3].contains("roofline per convolution"), "\(result.standardError)")
            #expect(
                other < lines.endIndex - 1
                    && lines[(other + 1)...].allSatisfy {
                        $0.contains(" memory ")
                            && [" resize ", " join ", " pool ", " concat ", " quantize "].contains(where: $0.contains)
                    }, "\(result.standardError)")
            #expect(
                !rows.isEmpty
                    && rows.allSatisfy {
                        ($0.contains(" memory ") || $0.contains(" compute "))
                            && [
                                " direct (", " padding-free (", " fused-block ", " fused-stem ", " fused-separable ",
                                " own-depthwise "
                            ].contains(
                                where: $0.contains)
                    }, "\(result.standardError)")
            #expect(
                lines.first?.contains("5 slice(s)") == true && lines.first?.contains("batch \(batch)") == true,
                "\(result.standardError)")
            let rate = lines.first { $0.contains("multiply-adds (") }
            #expect(
                rate?.contains("oneDNN ISA \(oneDNNEffectiveISA)") == true
                    && rate?.contains("× 2 thread(s)") == true, "\(result.standardError)")
            multiplyAdds.append(rate.flatMap { Double($0.split(separator: " ")[2]) } ?? -1)
            #expect(lines[2].contains("peak RSS"), "\(result.standardError)")
            outputs.append(out)
        }
        #expect(multiplyAdds[0] > 0 && multiplyAdds[0] == multiplyAdds[1], "\(multiplyAdds)")
        let first = try HDF5File.open(outputs[0]).read("/labels", as: Int32.self)
        let second = try HDF5File.open(outputs[1]).read("/labels", as: Int32.self)
        #expect(first.values == second.values && first.values.count == 5 * 16 * 20)
        let bad = try TestSupport.slicelab([
            "segment", input, "--model", model, "--out",
            folder.appendingPathComponent("bad.h5").path, "--batch", "0"
        ])
        #expect(bad.status == 2, "\(bad.standardError)")
    }

    /// The peak table: the per-cycle figures per ISA and precision.
    @Test func peakMultiplyAddsPerCycleFollowTheISA() {
        let table: [(String, Precision, Int)] = [
            ("AVX2", .fp32, 16), ("AVX2", .int8, 32), ("AVX2_VNNI", .int8, 64),
            ("AVX512_CORE", .fp32, 32), ("AVX512_CORE", .int8, 64), ("AVX512_CORE_VNNI", .int8, 128),
            ("AVX512_CORE_BF16", .bf16, 64), ("AVX512_CORE_AMX", .int8, 1024), ("AVX512_CORE_AMX", .bf16, 512),
            ("AVX512_CORE_AMX", .fp32, 32), ("AVX2", .bf16, 0)
        ]
        for (isa, precision, expected) in table {
            #expect(ComputePeak.multiplyAddsPerCycle(isa: isa, precision: precision) == expected, "\(isa) \(precision)")
        }
        let peak = ComputePeak(isa: "AVX2", threads: 2, gigahertz: 2.5)
        #expect(abs(peak.operationsPerSecond(.fp32) - 2 * 16 * 2 * 2.5e9) < 1)
    }

    /// `--timings`' peak is at the clock measured on the compute threads: a plausible x86-64 clock (a chain the
    /// compiler had shortened or skipped would read tens of GHz or more), and the peak says it was measured.
    @Test func peakClockIsMeasuredOnTheThreads() throws {
        #if arch(x86_64)
            let peak = ComputePeak.current(threads: 2)
            #expect(peak.clockIsMeasured && (0.8...6.5).contains(peak.gigahertz), "\(peak.gigahertz) GHz")
            #expect(peak.description(.fp32).hasSuffix("GHz (measured on the threads, busy)"))
        #endif
    }
}
