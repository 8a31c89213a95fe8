import Classical
import DeepLab
import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

@testable import DeepLabTraining
@testable import SliceLabDatasets
@testable import SliceLabKit

/// `train`'s fingerprint and plan (issue #18): the fingerprint against numpy and scipy, the plan's rules on
/// contrasting sets, flags over the plan, the plan in the checkpoint.
struct TrainingPlanTests {
    static let goldens = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/fingerprint_goldens.json")

    /// The synthetic nnU-Net set's cases 0–3 (8 × 16 × 16, spacing 3 × 0.75 × 1.25 mm, channel 0 "CT"), as
    /// `Datasets/goldens/fingerprint_goldens.py` measures them with numpy and `scipy.ndimage.label`: classes
    /// (cases, slices, components, smallest and typical smallest areas in pixels and mm²) exactly, intensities
    /// within 1e-9 relative (float64 sums in a different order), with every voxel and with 50 per case.
    @Test func fingerprintMatchesNumpyAndScipyOnTheSyntheticSet() throws {
        let folder = try TestSupport.temporaryFolder("fingerprint-goldens")
        defer { try? FileManager.default.removeItem(at: folder) }
        let set = try LabeledSet.open(try DatasetFixtures.makeNNUNet(in: folder, count: 4).path)
        let samples = try (0..<4).map { try set.load(DatasetFixtures.caseName($0)) }
        let golden = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.goldens)) as! [String: Any]
        func close(_ a: Double, _ b: Double) -> Bool { abs(a - b) <= 1e-9 * max(1, abs(b)) }
        for cap in [100_000, 50] {
            var builder = DatasetFingerprint.Builder(
                classNames: set.description.classes,
                channelNames: set.channelNames, modality: set.description.modality,
                samplesPerCase: cap)
            for sample in samples { builder.add(sample) }
            let fingerprint = builder.finish()
            #expect(fingerprint.caseCount == 4 && fingerprint.sliceCount == 32 && fingerprint.channelCount == 2)
            #expect(fingerprint.spacingMM?.median == [3.0, 0.75, 1.25] && fingerprint.size.median == [8, 16, 16])
            for row in golden["classes"] as! [[String: Any]] {
                let measured = fingerprint.classes[(row["label"] as! Int) - 1]
                #expect(measured.caseCount == row["case_count"] as! Int)
                #expect(measured.sliceCount == row["slice_count"] as! Int)
                #expect(measured.componentCount == row["component_count"] as! Int)
                #expect(close(measured.smallestAreaPixels, row["smallest_area_pixels"] as! Double))
                #expect(close(measured.smallestAreaMM2, row["smallest_area_mm2"] as! Double))
                #expect(close(measured.typicalSmallestAreaPixels, row["typical_smallest_area_pixels"] as! Double))
                #expect(close(measured.typicalSmallestAreaMM2, row["typical_smallest_area_mm2"] as! Double))
                #expect(
                    close(
                        measured.typicalSmallestDiameterPixels,
                        row["typical_smallest_diameter_pixels"] as! Double))
                #expect(close(measured.typicalThicknessPixels ?? -1, row["typical_thickness_pixels"] as! Double))
            }
            let intensities = (golden["intensities"] as! [String: Any])["\(cap)"] as! [[String: Any]]
            for row in intensities {
                let measured = fingerprint.intensities[row["channel"] as! Int]
                #expect(measured.sampledVoxels == row["sampled_voxels"] as! Int, "cap \(cap)")
                for (value, key) in [
                    (measured.mean, "mean"), (measured.standardDeviation, "std"),
                    (measured.percentile00_5, "percentile_00_5"),
                    (measured.percentile99_5, "percentile_99_5"), (measured.minimum, "min"),
                    (measured.maximum, "max")
                ] {
                    #expect(close(value, row[key] as! Double), "cap \(cap), channel \(measured.channel), \(key)")
                }
            }
            #expect(fingerprint.intensities.map(\.name) == ["CT", "noise"])
        }
    }

    /// Local thickness pixel by pixel on drawn masks (a line, strips, a disc, a rectangle, an L, a mask touching
    /// the edges), at the default cap and at cap 8 (beyond it: infinity), against the golden script's SciPy
    /// implementation of the same rules.
    @Test func localThicknessMatchesTheScipyGolden() throws {
        let golden = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.goldens)) as! [String: Any]
        let maps = golden["local_thickness"] as! [String: [String: Any]]
        #expect(maps.count == 4)
        for (name, map) in maps.sorted(by: { $0.key < $1.key }) {
            let rows = map["rows"] as! [String]
            let (height, width) = (rows.count, rows[0].count)
            let mask = rows.flatMap { $0.map { $0 == "#" } }
            let measured = LocalThickness.measure(mask, height: height, width: width, cap: map["cap"] as! Double)
            let expected = (map["thickness"] as! [[Any]]).flatMap { $0 }.map { value -> Double? in
                guard let number = value as? Double else { return nil }
                return number == -1 ? .infinity : number
            }
            #expect(measured.count == expected.count)
            let differing = zip(measured, expected).filter { m, e in
                switch (m, e) {
                case (nil, nil): return false
                case (let m?, let e?): return !(m == e || abs(m - e) <= 1e-12)
                default: return true
                }
            }.count
            #expect(differing == 0, "\(name): \(differing) pixels differ")
        }
    }

    /// A set of `count` 2-D cases `side` × `side`, each with one disc of `radius` (class 1) and intensities
    /// 100 + 10·label + (pixel index mod 7); with `fragments`, also two stray class-1 pixels.
    static func discCases(
        count: Int, side: Int, radius: Double, fragments: Bool = false,
        innerRadius: Double = 0
    ) -> [LabeledSample] {
        (0..<count).map { k in
            let centre = Double(side) / 2 + Double(k)
            var labels = (0..<(side * side)).map { p -> Int32 in
                let (dy, dx) = (Double(p / side) + 0.5 - centre, Double(p % side) + 0.5 - centre)
                let squared = dy * dy + dx * dx
                return squared <= radius * radius && squared > innerRadius * innerRadius ? 1 : 0
            }
            if fragments { (labels[side + 1], labels[side * side - side - 2]) = (1, 1) }
            let image = labels.enumerated().map { Float(100 + 10 * Int($1) + $0 % 7) }
            return LabeledSample(
                name: "disc\(k)", image: FloatTensor(shape: [1, 1, side, side], values: image),
                labels: LabelTensor(shape: [1, side, side], values: labels))
        }
    }

    static func fingerprint(_ samples: [LabeledSample], modality: String) -> DatasetFingerprint {
        var builder = DatasetFingerprint.Builder(
            classNames: ["background", "disc"], channelNames: [],
            modality: modality)
        for sample in samples { builder.add(sample) }
        return builder.finish()
    }

    /// Small discs (≈ 20 px across) on 128² MR images: 2.5 cells at stride 8, so the DeepLabV3+ decoder at
    /// stride 16 and no scaling (5 cells at its stride-4 logits) where DeepLabV3 would scale by 2, crop 128,
    /// per-image z-score; with `--decoder v3` given, scale 2 at stride 8. Large discs (≈ 80 px) on 256² CT images:
    /// DeepLabV3, no scaling, stride 8 (10 cells; stride 16 needs 8 cells there), crop 256, and CT clipping to the
    /// foreground's percentiles then z-score with its statistics.
    @Test func planScalesSmallStructuresAndNormalisesByModality() throws {
        let small = TrainingPlan.make(
            fingerprint: Self.fingerprint(
                Self.discCases(count: 3, side: 128, radius: 10),
                modality: "MR"),
            architecture: "deeplabv3_resnet18", inputChannels: 1,
            memoryBudgetBytes: 4 << 30)
        #expect(
            small.decoder == .v3plus && small.inputScale == 1 && small.outputStride == 16 && small.cropSize == 128,
            "\(small.lines)")
        #expect(small.preprocessing == .zScore && small.sources["normalize"] == .plan)
        #expect((small.cellsAcrossSmallestStructure ?? 0) >= TrainingPlan.minimumCells)
        #expect(
            small.lines.contains {
                $0.hasPrefix("plan: decoder v3plus: DeepLabV3 at stride 8 gives it 2.")
                    && $0.contains("would scale the input by 2")
            }, "\(small.lines)")
        let v3 = TrainingPlan.make(
            fingerprint: small.fingerprint, overrides: .init(decoder: .v3), architecture: "deeplabv3_resnet18",
            inputChannels: 1, memoryBudgetBytes: 4 << 30)
        #expect(v3.decoder == .v3 && v3.inputScale == 2 && v3.outputStride == 8 && v3.sources["decoder"] == .flag)
        #expect(v3.lines.contains { $0.hasPrefix("plan: decoder v3 (flag), crop 128,") }, "\(v3.lines)")
        // Stray pixels (0.6 % of the class's voxels) are fragments, not the smallest structure.
        let fragmented = Self.fingerprint(
            Self.discCases(count: 3, side: 128, radius: 10, fragments: true),
            modality: "MR")
        #expect(fragmented.classes[0].smallestAreaPixels == 1 && fragmented.classes[0].componentCount == 9)
        #expect(
            fragmented.classes[0].typicalSmallestAreaPixels == small.fingerprint.classes[0].typicalSmallestAreaPixels)
        #expect(
            TrainingPlan.make(
                fingerprint: fragmented, architecture: "deeplabv3_resnet18", inputChannels: 1,
                memoryBudgetBytes: 4 << 30
            ).inputScale == 1)
        let ctFingerprint = Self.fingerprint(Self.discCases(count: 3, side: 256, radius: 40), modality: "CT")
        let large = TrainingPlan.make(
            fingerprint: ctFingerprint, architecture: "deeplabv3_resnet18",
            inputChannels: 1, memoryBudgetBytes: 4 << 30)
        #expect(
            large.decoder == .v3 && large.inputScale == 1 && large.outputStride == 8 && large.cropSize == 256,
            "\(large.lines)")
        let statistics = ctFingerprint.intensities[0]
        #expect(statistics.name == "CT" && statistics.minimum == 110 && statistics.maximum == 116)
        #expect(
            large.preprocessing
                == .clippedZScore(
                    low: statistics.percentile00_5, high: statistics.percentile99_5,
                    mean: statistics.mean,
                    standardDeviation: statistics.standardDeviation))
        // Very large structures take the cheaper stride 16; a tight memory budget shrinks the crop and batch.
        let huge = TrainingPlan.make(
            fingerprint: Self.fingerprint(
                Self.discCases(count: 1, side: 512, radius: 90),
                modality: "MR"),
            architecture: "deeplabv3_resnet18", inputChannels: 1,
            memoryBudgetBytes: 700 << 20)
        #expect(
            huge.outputStride == 16 && huge.inputScale == 1 && huge.cropSize < 512 && huge.batchSize == 2,
            "\(huge.lines)")
        #expect(huge.estimatedBytesPerSample * 2 <= 700 << 20)
    }

    /// A thin ring (3 px wide, radius 50): by its area alone (35 px across as a disc) DeepLabV3 unscaled would do,
    /// but its local thickness of about 3 px asks for the decoder and the largest scale, 4, as the cortical ribbon
    /// does; the printout names both measures.
    @Test func thinStructuresPlanByTheirThickness() throws {
        let ring = Self.fingerprint(Self.discCases(count: 3, side: 128, radius: 50, innerRadius: 47), modality: "MR")
        let measured = ring.classes[0]
        #expect(measured.typicalSmallestDiameterPixels > 32 && measured.typicalSmallestDiameterPixels < 40)
        let thickness = try #require(measured.typicalThicknessPixels)
        #expect(thickness >= 2 && thickness <= 4, "\(thickness)")
        let plan = TrainingPlan.make(
            fingerprint: ring, architecture: "deeplabv3_resnet18", inputChannels: 1,
            memoryBudgetBytes: 4 << 30)
        #expect(
            plan.decoder == .v3plus && plan.inputScale == 4 && plan.outputStride == 16
                && plan.smallestStructureSizePixels == thickness)
        #expect(plan.lines.contains { $0.contains("px across by area") && $0.contains("px thick") }, "\(plan.lines)")
    }

    /// Every flag overrides its part and is marked as such; `dataset.json`'s preprocessing comes before the
    /// modality rule; a batch is planned as a multiple of the ranks.
    @Test func flagsOverrideTheirPartsOfThePlan() throws {
        let fingerprint = Self.fingerprint(Self.discCases(count: 3, side: 128, radius: 10), modality: "CT")
        let overrides = TrainingPlan.Overrides(
            cropSize: 96, decoder: .v3, inputScale: 1, outputStride: 16, batchSize: 3,
            preprocessing: .minMax)
        let given = TrainingPlan.make(
            fingerprint: fingerprint, overrides: overrides,
            architecture: "deeplabv3_resnet18", inputChannels: 1, memoryBudgetBytes: 4 << 30)
        #expect(given.cropSize == 96 && given.inputScale == 1 && given.outputStride == 16 && given.batchSize == 3)
        #expect(given.preprocessing == .minMax && Set(given.sources.values) == [.flag])
        #expect(
            given.decoder == .v3
                && given.lines.contains {
                    $0.contains(
                        "decoder v3 (flag), crop 96 (flag), input scale 1 (flag), output stride 16 (flag), "
                            + "batch 3 (flag)")
                })
        // Only the stride given: the decoder and scale are planned for it (20 px at stride 16 needs DeepLabV3 to
        // scale by 4; DeepLabV3+'s stride-4 logits give 5 cells unscaled).
        let strideOnly = TrainingPlan.make(
            fingerprint: fingerprint, overrides: .init(outputStride: 16),
            datasetPreprocessing: .window(center: 40, width: 400),
            architecture: "deeplabv3_resnet18", inputChannels: 1,
            memoryBudgetBytes: 4 << 30, ranks: 3)
        #expect(
            strideOnly.outputStride == 16 && strideOnly.decoder == .v3plus && strideOnly.inputScale == 1
                && strideOnly.sources["input_scale"] == .plan)
        #expect(strideOnly.preprocessing == .window(center: 40, width: 400))
        #expect(strideOnly.sources["normalize"] == .datasetJSON && strideOnly.batchSize % 3 == 0)
        #expect(strideOnly.lines.contains { $0.contains("(dataset.json)") })
    }

    /// `train` on the synthetic 3-D CT set: the plan is printed, stored in both checkpoints (JSON attribute
    /// `plan`, with its fingerprint), its normalisation reaches the checkpoint's `preprocessing`, and the
    /// flags given (`--crop`, `--batch`) are kept and marked; class-balanced slices are on for volumes.
    @Test func trainStoresThePrintedPlanInTheCheckpoint() throws {
        let folder = try TestSupport.temporaryFolder("plan-checkpoint")
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = try DatasetFixtures.makeNNUNet(in: folder, count: 5, channels: 1)
        var options = TrainOptions(
            datasetPath: root.path, architecture: "pixel-linear", classCount: 3,
            outputPath: folder.appendingPathComponent("model.h5").path)
        (options.steps, options.batchSize, options.cropSize) = (2, 2, 16)
        let (progress, text) = TrainerTests.quiet(2)
        try TrainWorkflow.run(options, progress: progress) {
            PixelLinearNetwork(inputChannels: $0.inputChannels, classCount: $0.classCount, seed: 3)
        }
        let printed = text()
        #expect(printed.contains(", crop 16 (flag)") && printed.contains("batch 2 (flag)"), "\(printed)")
        #expect(printed.contains(#"plan: normalize {"high":"#) && printed.contains(#""normalize":"ct""#))
        for path in [options.outputPath, options.lastCheckpointPath] {
            let file = try HDF5File.open(path)
            let json = try #require(try file.attribute("plan").stringValue)
            let plan = try JSONDecoder().decode(TrainingPlan.self, from: Data(json.utf8))
            #expect(plan.cropSize == 16 && plan.batchSize == 2 && plan.sources["crop"] == .flag)
            // An nnU-Net set's fingerprint covers every labeled training case (fold 0's 4 train and 1 val), as
            // nnU-Net's does, so its folds share one plan.
            #expect(plan.fingerprint.caseCount == 5 && plan.fingerprint.sliceCount == 40)
            let stored = try #require(try file.attribute("preprocessing").stringValue)
            #expect(stored == plan.preprocessing.json)
            guard case .clippedZScore = plan.preprocessing else {
                Issue.record("a CT set plans CT normalisation, not \(plan.preprocessing)")
                continue
            }
        }
        let set = try LabeledSet.open(root.path)
        let samples = try set.cases(in: "train").map { try set.load($0) }
        let plan = TrainWorkflow.makePlan(options, set: set, samples: samples, ranks: 1)
        #expect(try TrainWorkflow.configuration(options, set: set, plan: plan).classBalancedSliceProbability == 1.0 / 3)
    }

    /// The smallest significant structure, by hand: structures sorted by area until their voxels reach 5 % of
    /// the class's.
    @Test func fragmentsBelowFivePercentOfTheVoxelsArePassedOver() {
        typealias Builder = DatasetFingerprint.Builder
        #expect(Builder.smallestSignificantArea([(1, 1), (50, 400), (1, 1)]) == 50)  // 2 of 402 < 20.1
        #expect(Builder.smallestSignificantArea([(14, 14), (10, 10), (12, 12)]) == 10)  // 10 ≥ 1.8
        #expect(Builder.smallestSignificantArea([(3, 3), (3, 30), (40, 500)]) == 3)  // 33 ≥ 26.65
        #expect(Builder.smallestSignificantArea([(3, 3), (4, 20), (40, 500)]) == 40)  // 23 < 26.15
    }

    /// `--normalize ct` on a set whose modality is not CT still takes the foreground's statistics; the
    /// normalisation is a fixed affine map after clipping, so slices and whole images agree.
    @Test func ctNormalisationClipsThenZScoresWithFixedStatistics() throws {
        let ct = Preprocessing.clippedZScore(low: -100, high: 300, mean: 50, standardDeviation: 25)
        var values: [Float] = [-1000, -100, 50, 100, 300, 3000]
        ct.apply(to: &values)
        #expect(values == [-6, -6, 0, 2, 10, 10])
        let decoded = try JSONDecoder().decode(Preprocessing.self, from: Data(ct.json.utf8))
        #expect(decoded == ct)
        #expect(throws: DeepLabError.self) {
            try Preprocessing.clippedZScore(low: 1, high: 0, mean: 0, standardDeviation: 1).validate()
        }
        let fingerprint = Self.fingerprint(Self.discCases(count: 2, side: 32, radius: 6), modality: "MR")
        #expect(TrainingPlan.modalityPreprocessing(fingerprint) == .zScore)
        guard case .clippedZScore = TrainingPlan.modalityPreprocessing(fingerprint, modality: "CT") else {
            Issue.record("--normalize ct plans CT normalisation")
            return
        }
    }

    /// On a tiny 3-D set of 40 slices where class 2 is in slice 17 alone and class 1 in slices 0–19, with a
    /// third of the draws class-balanced: class 2 appears in 1/6 + 1/6 · 1/20 + 2/3 · 1/40 = 0.1917 of the
    /// sampled slices (within 3.5 binomial σ over 1200 draws), against 1/40 without; the draws are keyed by the
    /// global index, so two ranks together draw what one process draws.
    @Test func rareClassSlicesAppearAtTheConfiguredRate() throws {
        let (height, width) = (4, 4)
        let slices = (0..<40).map { index -> LabelTensor in
            var values = [Int32](repeating: 0, count: height * width)
            if index < 20 { values[0] = 1 }
            if index == 17 { values[5] = 2 }
            return LabelTensor(shape: [height, width], values: values)
        }
        let index = TrainWorkflow.classSlices(slices, classCount: 3)
        #expect(index == [Array(0..<20), [17]])
        let image = FloatTensor(shape: [1, height, width], values: [Float](repeating: 0, count: height * width))
        func rate(_ probability: Double, draws: Int) throws -> Double {
            let sampler = try BatchSampler(
                sampleCount: 40, batchSize: 4, augmenter: Augmenter(.none()),
                classSlices: index, classSliceProbability: probability
            ) { (image, slices[$0]) }
            var state = SamplerState(seed: 11)
            var hits = 0
            for _ in 0..<(draws / 4) {
                let batch = try sampler.nextBatch(&state)
                for n in 0..<4 where batch.labels.values[(n * 16)..<((n + 1) * 16)].contains(2) { hits += 1 }
            }
            return Double(hits) / Double(draws)
        }
        let expected = 1.0 / 6 + 1.0 / 6 / 20 + 2.0 / 3 / 40
        let sigma = (expected * (1 - expected) / 1200).squareRoot()
        let balanced = try rate(1.0 / 3, draws: 1200)
        #expect(abs(balanced - expected) < 3.5 * sigma, "rate \(balanced), expected \(expected)")
        #expect(try rate(0, draws: 1200) < 0.05)
        // Two ranks, each half of every batch, draw what one process draws.
        func sampler(rank: Int, shards: Int) throws -> BatchSampler {
            try BatchSampler(
                sampleCount: 40, batchSize: 4, augmenter: Augmenter(.none()), rank: rank,
                shardCount: shards, classSlices: index, classSliceProbability: 1.0 / 3
            ) {
                (FloatTensor(shape: [1, height, width], values: [Float](repeating: Float($0), count: 16)), slices[$0])
            }
        }
        var (one, first, second) = (SamplerState(seed: 3), SamplerState(seed: 3), SamplerState(seed: 3))
        for _ in 0..<20 {
            let whole = try sampler(rank: 0, shards: 1).nextBatch(&one)
            let a = try sampler(rank: 0, shards: 2).nextBatch(&first)
            let b = try sampler(rank: 1, shards: 2).nextBatch(&second)
            #expect(a.images.values + b.images.values == whole.images.values)
            #expect(a.labels.values + b.labels.values == whole.labels.values)
        }
    }
}
