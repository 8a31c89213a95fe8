import Classical
import DeepLab
import Foundation
import SliceLabSupport

/// What `train` measures of a set's training cases before planning, after nnU-Net's dataset fingerprint
/// (`nnunetv2/experiment_planning/dataset_fingerprint`): spacings and sizes, the smallest structure of each class,
/// and the foreground's intensities per channel. Stored in the checkpoint inside the plan (`TrainingPlan`).
///
/// Sizes and spacings are in the array's axis order (slices, rows, columns); a 2-D case counts as one slice.
/// A structure is a connected component of one class (face neighbours, as `scipy.ndimage.label`'s default
/// structure: 4-connected in a 2-D case, 6-connected in a volume), and its size is measured in the slice plane
/// that `train` learns on: the area of its largest cross-section, so a sphere counts by its equator, not its
/// one-pixel poles. Its thickness is measured in the same plane, as local thickness (`LocalThickness`), so a
/// long thin structure (the cortical ribbon) counts as thin although its area is large.
public struct DatasetFingerprint: Codable, Equatable, Sendable {
    /// The median, minimum and maximum of a quantity per axis (slices, rows, columns).
    public struct AxisSpread: Codable, Equatable, Sendable {
        public var median: [Double]
        public var minimum: [Double]
        public var maximum: [Double]
    }

    /// The structures of one foreground class over the training cases.
    public struct ClassStructures: Codable, Equatable, Sendable {
        /// The label value.
        public var label: Int
        public var name: String
        /// Cases and slices that hold the class, and its structures (connected components) over all cases.
        public var caseCount: Int
        public var sliceCount: Int
        public var componentCount: Int
        /// The smallest structure over all cases (by its largest cross-section), in pixels of the slice plane and
        /// in mm² (pixels × row spacing × column spacing of its case; the smallest in mm² need not be the
        /// smallest in pixels).
        public var smallestAreaPixels: Double
        public var smallestAreaMM2: Double
        /// The median over the cases that hold the class of each case's smallest significant structure (the
        /// smallest once fragments holding less than 5 % of the class's voxels together are passed over,
        /// `Builder.smallestSignificantArea`): what the plan uses, so stray pixels do not decide it.
        public var typicalSmallestAreaPixels: Double
        public var typicalSmallestAreaMM2: Double
        /// The median over the cases that hold the class of each case's median local thickness over the class's
        /// pixels (slice by slice, `LocalThickness`), in pixels; `LocalThickness.cap` means at least that. Nil in
        /// plans written before it was measured.
        public var typicalThicknessPixels: Double?

        /// The diameter of a disc of `typicalSmallestAreaPixels`: 2·√(A/π), in pixels.
        public var typicalSmallestDiameterPixels: Double { 2 * (typicalSmallestAreaPixels / Double.pi).squareRoot() }

        /// The size the plan resolves: the smaller of that diameter and the typical thickness.
        public var typicalSizePixels: Double { min(typicalSmallestDiameterPixels, typicalThicknessPixels ?? .infinity) }
    }

    /// The intensities of one channel over sampled foreground voxels (label > 0) of the training cases.
    public struct IntensityStatistics: Codable, Equatable, Sendable {
        public var channel: Int
        /// The channel's modality or name (nnU-Net's `channel_names`, else `dataset.json`'s `modality`).
        public var name: String
        public var sampledVoxels: Int
        public var mean: Double
        /// The population standard deviation (numpy's `std`, ddof 0).
        public var standardDeviation: Double
        /// Percentiles with linear interpolation, as `numpy.percentile`'s default.
        public var percentile00_5: Double
        public var percentile99_5: Double
        public var minimum: Double
        public var maximum: Double
    }

    public var caseCount: Int
    public var sliceCount: Int
    public var channelCount: Int
    /// Voxel spacing in mm (slice, row, column) of the cases that carry one (nil when none does).
    public var spacingMM: AxisSpread?
    /// Image size in voxels (slices, rows, columns).
    public var size: AxisSpread
    /// Every foreground class (label 1…K − 1), present or not.
    public var classes: [ClassStructures]
    public var intensities: [IntensityStatistics]
    /// Foreground voxels sampled per case and channel at most: every k-th in (slice, row, column) order with
    /// k = ⌈count / cap⌉.
    public var samplesPerCase: Int

    /// The smallest typical structure over the classes present (its class and `typicalSizePixels`), or nil when
    /// no training case has foreground.
    public var smallestStructure: (name: String, sizePixels: Double)? {
        classes.filter { $0.caseCount > 0 }.min { $0.typicalSizePixels < $1.typicalSizePixels }
            .map { ($0.name, $0.typicalSizePixels) }
    }
}

// MARK: - Measuring

extension DatasetFingerprint {
    /// Accumulates the fingerprint one case at a time, so the cases need not be held together.
    public struct Builder {
        let classNames: [String]
        let channelNames: [String]
        let samplesPerCase: Int
        var caseCount = 0, sliceCount = 0, channelCount = 0
        var spacings: [[Double]] = [], sizes: [[Double]] = []
        /// Per foreground class: the cases holding it, its slices and components, and per case the smallest
        /// component in pixels and in mm².
        var classCases: [Int], classSlices: [Int], classComponents: [Int]
        var caseSmallestPixels: [[Double]], caseSmallestMM2: [[Double]]
        var caseTypicalPixels: [[Double]], caseTypicalMM2: [[Double]], caseThickness: [[Double]]
        var foreground: [[Float]] = []

        /// - Parameters:
        ///   - classNames: every class, the background first.
        ///   - channelNames: a name per channel (nnU-Net's `channel_names`); empty to name every channel by the
        ///     set's `modality`, given as `modality`.
        public init(classNames: [String], channelNames: [String], modality: String, samplesPerCase: Int = 100_000) {
            self.classNames = classNames
            self.channelNames = channelNames.isEmpty ? [modality] : channelNames
            self.samplesPerCase = max(1, samplesPerCase)
            let foregroundClasses = max(0, classNames.count - 1)
            classCases = Array(repeating: 0, count: foregroundClasses)
            classSlices = classCases
            classComponents = classCases
            caseSmallestPixels = Array(repeating: [], count: foregroundClasses)
            caseSmallestMM2 = caseSmallestPixels
            caseTypicalPixels = caseSmallestPixels
            caseTypicalMM2 = caseSmallestPixels
            caseThickness = caseSmallestPixels
        }

        /// Adds one raw (not preprocessed) case.
        public mutating func add(_ sample: LabeledSample) {
            let (frames, channels) = (sample.image.shape[0], sample.image.shape[1])
            let (height, width) = (sample.image.shape[2], sample.image.shape[3])
            caseCount += 1
            sliceCount += frames
            channelCount = max(channelCount, channels)
            if sample.hasSpacing { spacings.append(sample.spacing) }
            sizes.append([Double(frames), Double(height), Double(width)])
            let pixelMM2 = sample.spacing[1] * sample.spacing[2]
            let plane = height * width
            var structures = [[(area: Int, voxels: Int)]](repeating: [], count: classCases.count)
            for structure in Self.structureAreas(sample.labels.values, frames: frames, height: height, width: width)
            where structure.label >= 1 && structure.label <= classCases.count {
                structures[Int(structure.label) - 1].append((structure.area, structure.voxels))
            }
            for c in structures.indices where !structures[c].isEmpty {
                classComponents[c] += structures[c].count
                classCases[c] += 1
                let smallest = Self.smallestSignificantArea(structures[c])
                caseSmallestPixels[c].append(Double(structures[c].map(\.area).min() ?? 0))
                caseSmallestMM2[c].append(Double(structures[c].map(\.area).min() ?? 0) * pixelMM2)
                caseTypicalPixels[c].append(Double(smallest))
                caseTypicalMM2[c].append(Double(smallest) * pixelMM2)
                caseThickness[c].append(
                    Self.medianThickness(
                        of: Int32(c + 1), in: sample.labels.values,
                        frames: frames, height: height, width: width))
            }
            for frame in 0..<frames {
                var inSlice = Set<Int32>()
                for value in sample.labels.values[(frame * plane)..<((frame + 1) * plane)] where value > 0 {
                    inSlice.insert(value)
                }
                for label in inSlice where label <= classCases.count { classSlices[Int(label) - 1] += 1 }
            }
            while foreground.count < channels { foreground.append([]) }
            let count = sample.labels.values.reduce(0) { $0 + ($1 > 0 ? 1 : 0) }
            let step = max(1, (count + samplesPerCase - 1) / samplesPerCase)
            for channel in 0..<channels {
                var seen = 0
                for frame in 0..<frames {
                    let base = (frame * channels + channel) * plane
                    for p in 0..<plane where sample.labels.values[frame * plane + p] > 0 {
                        if seen % step == 0 { foreground[channel].append(sample.image.values[base + p]) }
                        seen += 1
                    }
                }
            }
        }

        /// The fingerprint of the cases added.
        public func finish() -> DatasetFingerprint {
            func spread(_ rows: [[Double]]) -> AxisSpread {
                let axes = (0..<3).map { axis in rows.map { $0[axis] } }
                return AxisSpread(
                    median: axes.map(Self.median), minimum: axes.map { $0.min() ?? 0 },
                    maximum: axes.map { $0.max() ?? 0 })
            }
            let classes = classCases.indices.map { c in
                ClassStructures(
                    label: c + 1, name: c + 1 < classNames.count ? classNames[c + 1] : "class \(c + 1)",
                    caseCount: classCases[c], sliceCount: classSlices[c],
                    componentCount: classComponents[c],
                    smallestAreaPixels: caseSmallestPixels[c].min() ?? 0,
                    smallestAreaMM2: caseSmallestMM2[c].min() ?? 0,
                    typicalSmallestAreaPixels: Self.median(caseTypicalPixels[c]),
                    typicalSmallestAreaMM2: Self.median(caseTypicalMM2[c]),
                    typicalThicknessPixels: caseThickness[c].isEmpty ? nil : Self.median(caseThickness[c]))
            }
            let intensities = foreground.enumerated().map { channel, values in
                Self.statistics(
                    values, channel: channel,
                    name: channel < channelNames.count ? channelNames[channel] : channelNames[0])
            }
            return DatasetFingerprint(
                caseCount: caseCount, sliceCount: sliceCount, channelCount: channelCount,
                spacingMM: spacings.isEmpty ? nil : spread(spacings), size: spread(sizes),
                classes: classes, intensities: intensities, samplesPerCase: samplesPerCase)
        }

        /// The size of the smallest structure of a class in one case that matters: with the structures sorted
        /// by area, the area of the one at which their voxels reach `significantShare` of the class's voxels, so
        /// fragments that hold less than that together are passed over.
        static func smallestSignificantArea(_ structures: [(area: Int, voxels: Int)]) -> Int {
            let sorted = structures.sorted { ($0.area, $0.voxels) < ($1.area, $1.voxels) }
            let total = sorted.reduce(0) { $0 + $1.voxels }
            var cumulative = 0
            for structure in sorted {
                cumulative += structure.voxels
                if Double(cumulative) >= significantShare * Double(total) { return structure.area }
            }
            return sorted.last?.area ?? 0
        }

        /// The share of a class's voxels below which its smallest structures count as fragments.
        public static let significantShare = 0.05

        /// Every structure of a case's labels [frames, height, width], a 6-connected component of equal nonzero
        /// labels (face neighbours, in-plane and across slices; a 2-D case's are 4-connected), with its in-plane
        /// size, the area of its largest cross-section in one slice in pixels, and its voxels.
        static func structureAreas(
            _ labels: [Int32], frames: Int, height: Int,
            width: Int
        ) -> [(label: Int32, area: Int, voxels: Int)] {
            let plane = height * width
            var visited = [Bool](repeating: false, count: labels.count)
            var perSlice = [Int](repeating: 0, count: frames)
            var result: [(Int32, Int, Int)] = []
            var stack: [Int] = []
            var touched: [Int] = []
            for start in labels.indices where labels[start] > 0 && !visited[start] {
                let label = labels[start]
                visited[start] = true
                stack.append(start)
                while let p = stack.popLast() {
                    let (z, y, x) = (p / plane, (p % plane) / width, p % width)
                    if perSlice[z] == 0 { touched.append(z) }
                    perSlice[z] += 1
                    for (nz, ny, nx) in [
                        (z - 1, y, x), (z + 1, y, x), (z, y - 1, x), (z, y + 1, x),
                        (z, y, x - 1), (z, y, x + 1)
                    ]
                    where nz >= 0 && nz < frames && ny >= 0 && ny < height && nx >= 0 && nx < width {
                        let q = nz * plane + ny * width + nx
                        if !visited[q] && labels[q] == label {
                            visited[q] = true
                            stack.append(q)
                        }
                    }
                }
                result.append((label, touched.map { perSlice[$0] }.max() ?? 0, touched.reduce(0) { $0 + perSlice[$1] }))
                for z in touched { perSlice[z] = 0 }
                touched.removeAll(keepingCapacity: true)
            }
            return result
        }

        /// The median local thickness over the pixels of `label` in a case's labels [frames, height, width],
        /// measured slice by slice; thickness beyond `LocalThickness.cap` counts as the cap.
        static func medianThickness(
            of label: Int32, in labels: [Int32], frames: Int, height: Int,
            width: Int
        ) -> Double {
            let plane = height * width
            var values: [Double] = []
            for frame in 0..<frames {
                let mask = labels[(frame * plane)..<((frame + 1) * plane)].map { $0 == label }
                guard mask.contains(true) else { continue }
                for thickness in LocalThickness.measure(mask, height: height, width: width) {
                    if let thickness { values.append(min(thickness, LocalThickness.cap)) }
                }
            }
            return median(values)
        }

        static func median(_ values: [Double]) -> Double {
            guard !values.isEmpty else { return 0 }
            let sorted = values.sorted()
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }

        static func statistics(_ values: [Float], channel: Int, name: String) -> IntensityStatistics {
            guard !values.isEmpty else {
                return IntensityStatistics(
                    channel: channel, name: name, sampledVoxels: 0, mean: 0,
                    standardDeviation: 0, percentile00_5: 0, percentile99_5: 0,
                    minimum: 0, maximum: 0)
            }
            let count = Double(values.count)
            let mean = values.reduce(0.0) { $0 + Double($1) } / count
            let variance = values.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / count
            let sorted = values.sorted()
            func percentile(_ q: Double) -> Double { Percentile.ofSorted(sorted, q) }
            return IntensityStatistics(
                channel: channel, name: name, sampledVoxels: values.count, mean: mean,
                standardDeviation: variance.squareRoot(), percentile00_5: percentile(0.5),
                percentile99_5: percentile(99.5), minimum: Double(sorted[0]),
                maximum: Double(sorted[sorted.count - 1]))
        }
    }
}
