import Foundation
import SliceLabSupport

/// A series found in a folder: its files and frames sorted into slices, with geometry, before any pixel is
/// decoded. `load()` decodes it into a `Volume`.
// @unchecked Sendable: constant values and `DICOMFile`s (themselves safe to share); slices decode in parallel.
public struct Series: @unchecked Sendable {
    /// One slice: a frame of a file and where it lies.
    // @unchecked Sendable: constants and a shared `DICOMFile` (see `Series`).
    public struct Slice: @unchecked Sendable {
        public let file: DICOMFile
        public let frame: Int
        /// ImagePositionPatient projected on the slice normal, millimetres (nil without geometry).
        public let location: Double?
        public let instanceNumber: Int?
    }

    public let seriesInstanceUID: String
    /// Sorted by location along the normal (else by Instance Number, then frame).
    public let slices: [Slice]
    /// Spacing between slices from positions (millimetres); nil with a single slice or no geometry.
    public let sliceSpacing: Double?
    public let warnings: [String]
    public var first: DICOMFile { slices[0].file }

    // MARK: - Scanning folders

    /// The result of scanning a folder: series, and the files that were skipped with their reasons.
    public struct Scan: Sendable {
        public let series: [Series]
        public let skipped: [(file: String, reason: String)]
    }

    /// Scans a file or a folder (recursively), opens every DICOM image, groups by SeriesInstanceUID and sorts
    /// each series. Files that are not images, or cannot be read, are skipped with a reason.
    ///
    /// - Parameters:
    ///   - limits: the bound on decoded sizes every file is opened with (`--max-memory`).
    /// - Throws: `DICOMError.noSeries` when nothing loadable was found (with the reasons).
    public static func scan(_ path: String, limits: ReadLimits = .standard) throws -> Scan {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw DICOMError.unreadable(file: path, reason: "no such file or folder")
        }
        let paths = isDirectory.boolValue ? files(under: path) : [path]
        var skipped: [(file: String, reason: String)] = []
        var groups: [String: [DICOMFile]] = [:]
        var order: [String] = []
        for file in paths {
            do {
                let dicom = try DICOMFile(path: file, limits: limits)
                guard dicom.hasPixelData else {
                    skipped.append((file, "no Pixel Data (not an image)"))
                    continue
                }
                let uid =
                    dicom.dataset.string(.seriesInstanceUID).flatMap { $0.isEmpty ? nil : $0 }
                    ?? "no-series-uid:\(file)"
                if groups[uid] == nil { order.append(uid) }
                groups[uid, default: []].append(dicom)
            } catch {
                skipped.append((file, reason(error, file: file)))
            }
        }
        var series: [Series] = []
        for uid in order {
            guard let members = groups[uid] else { continue }
            // Files of one series must share rows and columns; the odd ones out are skipped.
            let sizes = Dictionary(grouping: members) { "\($0.rows)x\($0.columns)" }
            // The size most files have; on a tie, the size of the first file in path order (deterministic).
            let common = sizes.max {
                ($0.value.count, $1.value.map(\.path).min() ?? "") < ($1.value.count, $0.value.map(\.path).min() ?? "")
            }?.key
            for (size, files) in sizes where size != common {
                for file in files {
                    skipped.append((file.path, "\(size) differs from the series' \(common ?? "")"))
                }
            }
            series.append(Series(uid: uid, files: sizes[common ?? ""] ?? members))
        }
        guard !series.isEmpty else {
            throw DICOMError.noSeries(folder: path, reasons: skipped.map { "\($0.file): \($0.reason)" })
        }
        return Scan(series: series, skipped: skipped)
    }

    /// An error's message without the leading "file: " it already carries.
    public static func reason(_ error: Error, file: String) -> String {
        let text = "\(error)"
        return text.hasPrefix(file + ": ") ? String(text.dropFirst(file.count + 2)) : text
    }

    /// Regular files under `folder`, recursively, sorted by path.
    static func files(under folder: String) -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: folder) else { return [] }
        var result: [String] = []
        while let relative = enumerator.nextObject() as? String {
            let full = (folder as NSString).appendingPathComponent(relative)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue,
                !(relative as NSString).lastPathComponent.hasPrefix(".")
            {
                result.append(full)
            }
        }
        return result.sorted()
    }

    /// Sorts the frames of `files` into slices and derives spacing and warnings.
    init(uid: String, files: [DICOMFile]) {
        seriesInstanceUID = uid
        var warnings: [String] = []
        let orientation = files.first?.imageOrientation(frame: 0)
        let normal = orientation.map { o in
            [o[1] * o[5] - o[2] * o[4], o[2] * o[3] - o[0] * o[5], o[0] * o[4] - o[1] * o[3]]
        }
        var slices: [Slice] = []
        var orientations: Set<String> = []
        for file in files {
            for frame in 0..<file.frameCount {
                let position = file.imagePosition(frame: frame)
                if let o = file.imageOrientation(frame: frame) {
                    orientations.insert(o.map { String(format: "%.4f", $0) }.joined(separator: ","))
                }
                let location = zip(position ?? [], normal ?? []).map(*).reduce(0, +)
                let hasGeometry = position != nil && normal != nil
                slices.append(
                    Slice(
                        file: file, frame: frame, location: hasGeometry ? location : nil,
                        instanceNumber: file.dataset.int(.instanceNumber)))
            }
        }
        if orientations.count > 1 { warnings.append("slices have \(orientations.count) different orientations") }
        if slices.allSatisfy({ $0.location != nil }) {
            slices.sort {
                ($0.location ?? 0, $0.instanceNumber ?? 0, $0.frame) < (
                    $1.location ?? 0, $1.instanceNumber ?? 0, $1.frame
                )
            }
        } else {
            if slices.count > 1 {
                warnings.append("no ImagePositionPatient/ImageOrientationPatient: sorted by InstanceNumber")
            }
            slices.sort {
                ($0.instanceNumber ?? 0, $0.file.path, $0.frame) < ($1.instanceNumber ?? 0, $1.file.path, $1.frame)
            }
        }
        var spacing: Double?
        let locations = slices.compactMap(\.location)
        if locations.count == slices.count, locations.count > 1 {
            let steps = zip(locations.dropFirst(), locations).map { $0 - $1 }
            let duplicates = steps.filter { abs($0) < 1e-3 }.count
            if duplicates > 0 { warnings.append("\(duplicates) duplicate slice position(s)") }
            let distinct = steps.filter { abs($0) >= 1e-3 }.sorted()
            if !distinct.isEmpty {
                let median = distinct[distinct.count / 2]
                spacing = median
                let gaps = distinct.filter { $0 > 1.5 * median }.count
                if gaps > 0 { warnings.append("\(gaps) gap(s) larger than 1.5 × the slice spacing \(median) mm") }
                if let low = distinct.first, let high = distinct.last, high - low > max(0.01 * median, 1e-3),
                    gaps == 0
                {
                    warnings.append(String(format: "non-uniform slice spacing (%.4g to %.4g mm)", low, high))
                }
            }
            // Gantry tilt: successive positions not along the normal.
            if let normal, let firstPosition = slices.first.flatMap({ $0.file.imagePosition(frame: $0.frame) }),
                let lastSlice = slices.last, let lastPosition = lastSlice.file.imagePosition(frame: lastSlice.frame)
            {
                let delta = zip(lastPosition, firstPosition).map { $0 - $1 }
                let along = zip(delta, normal).map(*).reduce(0, +)
                let length = sqrt(delta.map { $0 * $0 }.reduce(0, +))
                if length > 1e-6, abs(along) / length < 0.9999 {
                    let angle = acos(min(abs(along) / length, 1)) * 180 / .pi
                    warnings.append(String(format: "slices are tilted by %.2f° from the normal (gantry tilt)", angle))
                }
            }
        }
        self.slices = slices
        self.sliceSpacing = spacing
        self.warnings = warnings
    }

    // MARK: - Loading

    /// Loads a folder: every series as a `Volume`, files that failed skipped with reasons.
    public static func load(folder: String, limits: ReadLimits = .standard) throws
        -> (volumes: [Volume], skipped: [(file: String, reason: String)])
    {
        let scan = try scan(folder, limits: limits)
        var volumes: [Volume] = []
        var skipped = scan.skipped
        for series in scan.series {
            let (volume, failed) = series.loadSkippingFailures()
            skipped += failed
            if let volume { volumes.append(volume) }
        }
        guard !volumes.isEmpty else {
            throw DICOMError.noSeries(folder: folder, reasons: skipped.map { "\($0.file): \($0.reason)" })
        }
        return (volumes, skipped)
    }

    /// Loads the series; files whose pixels fail to decode are left out (with their reasons) and the rest is
    /// sorted and loaded again. Nil when no file of the series decodes.
    public func loadSkippingFailures() -> (volume: Volume?, skipped: [(file: String, reason: String)]) {
        do { try checkLimits() } catch {
            // Over the read limit: no file is at fault, and decoding them one by one would not help.
            return (nil, [(first.path, Self.reason(error, file: first.path))])
        }
        do { return (try load(), []) } catch {
            let (remaining, skipped) = droppingUndecodableFiles()
            guard let remaining, !skipped.isEmpty else {
                return (nil, skipped.isEmpty ? [(first.path, Self.reason(error, file: first.path))] : skipped)
            }
            let (volume, more) = remaining.loadSkippingFailures()
            return (volume, skipped + more)
        }
    }

    /// The series without the files whose frames fail to decode, each listed with its reason; frames are
    /// decoded one at a time and dropped, so memory stays at one frame. Nil when no file decodes.
    public func droppingUndecodableFiles() -> (series: Series?, skipped: [(file: String, reason: String)]) {
        var failing: Set<String> = []
        var skipped: [(file: String, reason: String)] = []
        for slice in slices where !failing.contains(slice.file.path) {
            do { _ = try slice.file.isColor ? [] : slice.file.modalityFrame(slice.frame) } catch {
                failing.insert(slice.file.path)
                skipped.append((slice.file.path, Self.reason(error, file: slice.file.path)))
            }
        }
        guard !failing.isEmpty else { return (self, []) }
        let remaining = Dictionary(grouping: slices.map(\.file), by: \.path)
            .filter { !failing.contains($0.key) }.compactMap(\.value.first)
        guard !remaining.isEmpty else { return (nil, skipped) }
        return (Series(uid: seriesInstanceUID, files: remaining.sorted { $0.path < $1.path }), skipped)
    }

    /// Checks that the whole series, decoded as one Float32 volume, fits the read limit its files were opened
    /// with.
    ///
    /// - Throws: `DICOMError.impossibleDimensions` naming the first file and the limit.
    public func checkLimits() throws {
        do {
            try first.limits.check(
                [slices.count, first.rows, first.columns], bytesPerValue: 4, file: first.path,
                what: "series \(seriesInstanceUID) of \(slices.count) slices")
        } catch let ReadLimitError.tooLarge(path, reason) {
            throw DICOMError.impossibleDimensions(file: path, reason: reason)
        }
    }

    /// Decodes every slice into one Float32 volume of modality values, allocated once.
    ///
    /// - Throws: `DICOMError.unsupportedImage` for colour series, `.impossibleDimensions` for a volume over the
    ///   files' read limit, or the first slice's decoding error.
    public func load() throws -> Volume {
        let file = first
        guard !file.isColor else {
            throw DICOMError.unsupportedImage(file: file.path, reason: "colour series are not loaded as volumes")
        }
        let plane = file.rows * file.columns
        try checkLimits()
        // Each slice is decoded straight into its place in the volume (no per-slice array, no zero-filling
        // pass); if one fails the volume is discarded.
        for slice in slices where slice.file.rows != file.rows || slice.file.columns != file.columns {
            throw DICOMError.impossibleDimensions(
                file: slice.file.path,
                reason: "\(slice.file.rows)×\(slice.file.columns) in a series of "
                    + "\(file.rows)×\(file.columns) slices")
        }
        let slices = self.slices
        let values = try [Float](unsafeUninitializedCapacity: slices.count * plane) { buffer, initialized in
            // Slices are decoded by `DICOMFile.decodeThreads` workers (slice k by worker k mod n); each file has its
            // own DCMTK handle, and each slice its own part of the volume.
            let workers = min(DICOMFile.decodeThreads, slices.count)
            let failures = SliceFailures()
            let volume = buffer
            Parallel.forEach(workers) { worker in
                for index in stride(from: worker, to: slices.count, by: workers) where !failures.any {
                    do {
                        try slices[index].file.modalityFrame(
                            slices[index].frame,
                            into: UnsafeMutableBufferPointer(
                                rebasing: volume[(index * plane)..<((index + 1) * plane)]))
                    } catch {
                        failures.record(error, slice: index)
                    }
                }
            }
            if let error = failures.first { throw error }
            initialized = slices.count * plane
        }
        return Volume(
            slices: slices.count, rows: file.rows, columns: file.columns, values: values,
            geometry: geometry, seriesInstanceUID: seriesInstanceUID,
            sourceFiles: slices.map(\.file.path), warnings: warnings)
    }

    /// The series' geometry in its slice order, as ITK's ImageSeriesReader derives it (see `Volume.geometry`).
    public var geometry: VolumeGeometry {
        Self.geometry(of: slices.map { ($0.file, $0.frame) }, sliceSpacing: sliceSpacing)
    }

    /// The geometry of `frames` stacked in the order given (a series' sorted slices, or a multi-frame file's
    /// frames in file order): origin at the first frame's position; direction columns the row and column
    /// directions and the slice normal, the normal negated when the frames step against it; slice spacing the
    /// distance from the first position to the last over the count − 1 (ITK's rule), else `sliceSpacing`, the
    /// slice thickness, or 1 (one frame, or no positions).
    public static func geometry(of frames: [(file: DICOMFile, frame: Int)], sliceSpacing: Double?) -> VolumeGeometry {
        let (file, frame) = frames[0]
        let pixel = file.pixelSpacing(frame: frame)
        let orientation = file.imageOrientation(frame: frame) ?? [1, 0, 0, 0, 1, 0]
        let (row, column) = (Array(orientation[0..<3]), Array(orientation[3..<6]))
        var normal = [
            row[1] * column[2] - row[2] * column[1], row[2] * column[0] - row[0] * column[2],
            row[0] * column[1] - row[1] * column[0]
        ]
        let origin = file.imagePosition(frame: frame)
        var sliceStep = sliceSpacing ?? file.sliceThickness(frame: frame) ?? 1
        if frames.count > 1, let origin, let lastFrame = frames.last,
            let last = lastFrame.file.imagePosition(frame: lastFrame.frame)
        {
            let step = zip(last, origin).map { $0 - $1 }
            let distance = sqrt(step.map { $0 * $0 }.reduce(0, +))
            if distance > 1e-9 { sliceStep = distance / Double(frames.count - 1) }
            if zip(step, normal).map(*).reduce(0, +) < 0 { normal = normal.map { -$0 } }
        }
        return VolumeGeometry(
            spacing: [sliceStep, pixel?.row ?? 1, pixel?.column ?? 1], origin: origin ?? [0, 0, 0],
            direction: (0..<9).map { [row, column, normal][$0 % 3][$0 / 3] })
    }
}

/// The failure of the lowest slice index seen by the workers decoding a series (they stop at the first one).
// @unchecked Sendable: `failure` is read and written under `lock` only.
private final class SliceFailures: @unchecked Sendable {
    private let lock = NSLock()
    private var failure: (slice: Int, error: Error)?

    var any: Bool { lock.withLock { failure != nil } }
    var first: Error? { lock.withLock { failure?.error } }

    func record(_ error: Error, slice: Int) {
        lock.withLock {
            if failure == nil || slice < (failure?.slice ?? .max) { failure = (slice, error) }
        }
    }
}
