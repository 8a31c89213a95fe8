import DICOM
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabSupport

/// `slicelab convert`: DICOM → HDF5 (values in physical units, with geometry) or PNG (the display image).
public enum ConvertWorkflow {
    /// Errors in the conversion request itself.
    public enum ConvertError: Error, CustomStringConvertible {
        case unsupportedOutput(String, withReference: Bool = false)
        case badWindow(String)
        case segmentationNeedsReference(String)
        case frameOutOfRange(frame: Int, count: Int, source: String)

        public var description: String {
            switch self {
            case .unsupportedOutput(let path, let withReference):
                if withReference {
                    return "\(path): with --reference the output is a DICOM SEG (.dcm), or for a SEG input a label "
                        + "map (.h5, .nii, .nii.gz)"
                }
                if path.lowercased().hasSuffix(".dcm") {
                    return "\(path): a .dcm output is a DICOM SEG: give a label file as PATH and --reference SERIES"
                }
                return "\(path): output must end in .h5, .png, .nii or .nii.gz (NIfTI from DICOM, HDF5 or NIfTI)"
            case .segmentationNeedsReference(let path):
                return "\(path): a DICOM SEG holds only the slices where a segment lies; give the series it was made "
                    + "on with --reference SERIES to convert it to a label map on that series' grid"
            case .badWindow(let text): return "--window \(text): expected CENTER,WIDTH with WIDTH > 0, or 'auto'"
            case .frameOutOfRange(let frame, let count, let source):
                return "\(source): --frame \(frame) does not exist (\(count) frame\(count == 1 ? "" : "s"))"
            }
        }
    }

    /// The requested window: nil for the file's own (else automatic).
    public enum WindowChoice: Equatable {
        case file, automatic
        case explicit(VOIWindow)

        /// Parses "C,W" or "auto".
        public init(_ text: String?) throws {
            guard let text else {
                self = .file
                return
            }
            if text.lowercased() == "auto" {
                self = .automatic
                return
            }
            let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2, let center = parts[0], let width = parts[1], width > 0 else {
                throw ConvertError.badWindow(text)
            }
            self = .explicit(VOIWindow(center: center, width: width))
        }
    }

    /// Converts `source` (a file or a folder) to `output` (.h5 or .png), reading with `limits`, or with
    /// `reference` a label file to a DICOM SEG (`output` .dcm) over that series. Returns lines for the user.
    public static func run(
        source: String, output: String, window: WindowChoice, frame: Int, bits: Int,
        reference: String? = nil, labelOptions: LabelReadingOptions = LabelReadingOptions(),
        dicomOutput: SegmentationExport.DICOMOutput = .seg, limits: ReadLimits = .standard
    ) throws -> [String] {
        let format = OutputFormat(path: output)
        let fromSEG =
            !isFolder(source) && (try? ImageFormats.format(of: source)) is DICOMFormat
            && (try? DICOMFile(path: source, limits: limits))?.dataset.string(.segmentationType) != nil
        if isStructureFile(source) && format != .dicom {
            var options = labelOptions
            options.reference = reference ?? options.reference
            return try writeLabels(source: source, to: output, options: options, limits: limits)
        }
        if let reference {
            if fromSEG, format == .hdf5 || format == .nifti {
                return try writeSegmentationLabels(seg: source, reference: reference, to: output, limits: limits)
            }
            guard format == .dicom else {
                throw ConvertError.unsupportedOutput(output, withReference: true)
            }
            return try SegmentationExport.convert(
                labels: source, reference: reference, to: output, as: dicomOutput, options: labelOptions)
        }
        if fromSEG { throw ConvertError.segmentationNeedsReference(source) }
        if format == .dicom { throw ConvertError.unsupportedOutput(output, withReference: false) }
        if format == .nrrd {
            return try writeLabels(source: source, to: output, options: labelOptions, limits: limits)
        }
        if format == .nifti {
            return try writeNIfTIFile(source: source, to: output, limits: limits)
        }
        if !isFolder(source), (try? ImageFormats.format(of: source)) is NIfTIFormat {
            guard format == .hdf5 else { throw ConvertError.unsupportedOutput(output) }
            return try writeNIfTI(source: source, to: output, limits: limits)
        }
        if format == .hdf5 {
            return try writeHDF5(source: source, to: output, limits: limits)
        }
        if format == .png {
            return try writePNG(source: source, to: output, window: window, frame: frame, bits: bits, limits: limits)
        }
        throw ConvertError.unsupportedOutput(output)
    }

    // MARK: - Label maps

    /// Whether `path` is a label file of named structures (an RT Structure Set, a 3D Slicer segmentation).
    static func isStructureFile(_ path: String) -> Bool {
        guard !isFolder(path), let format = try? ImageFormats.format(of: path) else { return false }
        if format is RTStructureSetFormat { return true }
        guard format is NRRDFormat, let header = try? NRRDHeader.read(path) else { return false }
        return header.value("Segment0_ID") != nil
    }

    /// A label file (any format the registry reads labels from) as a NIfTI label map, an HDF5 `/labels`, or a 3D
    /// Slicer segmentation (`.seg.nrrd`), with the file's geometry where it has one (else its spacing, axes along
    /// L, P, S); the reader's notes (how structures became classes) come first.
    static func writeLabels(
        source: String, to output: String, options: LabelReadingOptions, limits: ReadLimits
    ) throws -> [String] {
        let loaded = try LoadedLabels.read(source, limits: limits, options: options)
        let map = loaded.labels
        let geometry =
            loaded.geometry
            ?? VolumeGeometry(spacing: map.spacing, origin: [0, 0, 0], direction: VolumeGeometry.identity.direction)
        switch OutputFormat(path: output) {
        case .nrrd?:
            let present = Set(map.labels).subtracting([0]).sorted()
            try NRRDFormat.writeSegmentation(
                map, geometry: geometry,
                classNames: Dictionary(
                    uniqueKeysWithValues: present.map { (Int($0), loaded.classNames[Int($0)] ?? "class \($0)") }),
                to: output)
        case .nifti?:
            try NIfTIImage.write(
                .labels(map.labels), dimensions: [map.columns, map.rows, map.frames], geometry: geometry, to: output)
        default:
            try map.write(to: output, elementType: (map.labels.max() ?? 0) > 255 ? .uint16 : .uint8) { h5 in
                try h5.setAttribute("origin", .doubles(geometry.origin), at: "/labels")
                try h5.setAttribute("direction", .doubles(geometry.direction), at: "/labels")
                try h5.setAttribute("geometry_version", .ints([2]), at: "/labels")
            }
        }
        return loaded.notes
            + ["wrote \(output): labels of \(source) (\(map.frames)×\(map.rows)×\(map.columns))"]
    }

    // MARK: - HDF5

    static func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// A single file keeps its frame order; a folder is one sorted volume per series.
    static func writeHDF5(source: String, to output: String, limits: ReadLimits) throws -> [String] {
        if !isFolder(source) {
            let file = try DICOMFile(path: source, limits: limits)
            guard file.hasPixelData else { throw DICOMError.noPixelData(file: source) }
            try HDF5File.write(to: output, updating: false) { h5 in
                try writeFile(file, to: h5, at: "/image")
            }
            return [
                "wrote \(output): /image \(file.frameCount)×\(file.rows)×\(file.columns)"
                    + (file.isColor ? "×3 RGB" : " Float32")
            ]
        }
        let scan = try Series.scan(source, limits: limits)
        var lines: [String] = []
        var volumes: [(Series, Volume?)] = []
        var skipped = scan.skipped
        for series in scan.series {
            // A series held in one file (a single image or one multi-frame file) is written as that file is;
            // colour series are written slice by slice as RGB.
            if Set(series.slices.map(\.file.path)).count == 1 || series.first.isColor {
                volumes.append((series, nil))
                continue
            }
            let (volume, failed) = series.loadSkippingFailures()
            skipped += failed
            if let volume { volumes.append((series, volume)) }
        }
        var written: [(Series, Volume?)] = []
        try HDF5File.write(to: output, updating: false) { h5 in
            for (series, volume) in volumes {
                let path = "/series/\(series.seriesInstanceUID)/image"
                do {
                    // A series read from one file (or colour) is decoded here, before anything of it is written:
                    // a file that fails to decode is skipped like those that fail while loading a volume.
                    if let volume {
                        try writeVolume(volume, series: series, to: h5, at: path)
                    } else if Set(series.slices.map(\.file.path)).count == 1 {
                        try writeFile(series.first, to: h5, at: path)
                    } else {
                        try writeColorSeries(series, to: h5, at: path)
                    }
                } catch let error as DICOMError where volume == nil {
                    for file in Set(series.slices.map(\.file.path)).sorted() {
                        skipped.append((file, Series.reason(error, file: file)))
                    }
                    continue
                }
                // /image names the first series' dataset (a hard link: the same values and attributes, stored once).
                if written.isEmpty { try h5.link("/image", to: path) }
                written.append((series, volume))
                lines.append(
                    "series \(series.seriesInstanceUID): \(volume?.slices ?? series.slices.count) slice(s)"
                        + (volume?.warnings.isEmpty == false
                            ? "; warnings: " + (volume?.warnings ?? []).joined(separator: "; ") : ""))
            }
            guard !written.isEmpty else {
                throw DICOMError.noSeries(folder: source, reasons: skipped.map { "\($0.file): \($0.reason)" })
            }
        }
        for entry in skipped { lines.append("skipped \(entry.file): \(entry.reason)") }
        let used = written.map { volume in
            volume.1.map { Set($0.sourceFiles).count }
                ?? Set(volume.0.slices.map(\.file.path)).count
        }.reduce(0, +)
        lines.append(
            "converted \(used) of \(used + skipped.count) files into \(written.count) series, "
                + "\(skipped.count) skipped")
        lines.append("wrote \(output)")
        return lines
    }

    /// The source's attributes and the geometry contract's (`spacing` z, y, x, `origin`, `direction`,
    /// `geometry_version` 2).
    private static func attributes(
        _ file: DICOMFile, geometry: VolumeGeometry, source: String, on h5: HDF5File,
        at path: String
    ) throws {
        let rescale = file.rescale(frame: 0) ?? (1, 0)
        try h5.setAttribute("spacing", .doubles(geometry.spacing), at: path)
        try h5.setAttribute("origin", .doubles(geometry.origin), at: path)
        try h5.setAttribute("direction", .doubles(geometry.direction), at: path)
        try h5.setAttribute("geometry_version", .ints([2]), at: path)
        try h5.setAttribute("photometric_interpretation", .string(file.photometricInterpretation), at: path)
        try h5.setAttribute("modality", .string(file.dataset.string(.modality) ?? ""), at: path)
        try h5.setAttribute("rescale_slope", .double(rescale.slope), at: path)
        try h5.setAttribute("rescale_intercept", .double(rescale.intercept), at: path)
        try h5.setAttribute("transfer_syntax_uid", .string(file.transferSyntaxUID), at: path)
        try h5.setAttribute("source", .string(source), at: path)
    }

    private static func writeFile(_ file: DICOMFile, to h5: HDF5File, at path: String) throws {
        if file.isColor {
            let shape = [file.frameCount, file.rows, file.columns, 3]
            let first = try file.rgbFrame(0)
            if first.bitsPerSample <= 8 {
                var samples = [UInt8]()
                samples.reserveCapacity(shape.reduce(1, *))
                for frame in 0..<file.frameCount {
                    let rgb = frame == 0 ? first : try file.rgbFrame(frame)
                    samples.append(contentsOf: rgb.samples.lazy.map { UInt8(truncatingIfNeeded: $0) })
                }
                try h5.write(samples, shape: shape, to: path)
            } else {
                // 32-bit RGB keeps its top 16 bits: the contract stores UInt8 or UInt16.
                let shift = UInt32(max(first.bitsPerSample - 16, 0))
                var samples = [UInt16]()
                samples.reserveCapacity(shape.reduce(1, *))
                for frame in 0..<file.frameCount {
                    let rgb = frame == 0 ? first : try file.rgbFrame(frame)
                    samples.append(contentsOf: rgb.samples.lazy.map { UInt16(truncatingIfNeeded: $0 >> shift) })
                }
                try h5.write(samples, shape: shape, to: path)
            }
        } else {
            // Every frame decoded into its place in one array.
            let plane = file.rows * file.columns
            let values = try [Float](unsafeUninitializedCapacity: file.frameCount * plane) { buffer, initialized in
                for frame in 0..<file.frameCount {
                    try file.modalityFrame(
                        frame,
                        into: UnsafeMutableBufferPointer(
                            rebasing: buffer[(frame * plane)..<((frame + 1) * plane)]))
                }
                initialized = file.frameCount * plane
            }
            try h5.write(values, shape: [file.frameCount, file.rows, file.columns], to: path)
        }
        try attributes(
            file, geometry: Series.geometry(of: (0..<file.frameCount).map { (file, $0) }, sliceSpacing: nil),
            source: file.path, on: h5, at: path)
    }

    /// A colour series in slice order: [slices, rows, columns, 3], UInt8 or UInt16 (the widest slice decides).
    private static func writeColorSeries(_ series: Series, to h5: HDF5File, at path: String) throws {
        try series.first.limits.check(
            [series.slices.count, series.first.rows, series.first.columns, 3],
            bytesPerValue: 4, file: (series.first.path as NSString).deletingLastPathComponent,
            what: "colour series \(series.seriesInstanceUID)")
        var frames: [RGBFrame] = []
        for slice in series.slices { frames.append(try slice.file.rgbFrame(slice.frame)) }
        let bits = frames.map(\.bitsPerSample).max() ?? 8
        let shape = [frames.count, series.first.rows, series.first.columns, 3]
        if bits <= 8 {
            try h5.write(frames.flatMap { $0.samples.map { UInt8(truncatingIfNeeded: $0) } }, shape: shape, to: path)
        } else {
            try h5.write(
                frames.flatMap { frame in
                    frame.samples.map { UInt16(truncatingIfNeeded: $0 >> UInt32(max(frame.bitsPerSample - 16, 0))) }
                }, shape: shape, to: path)
        }
        try attributes(
            series.first, geometry: series.geometry,
            source: (series.first.path as NSString).deletingLastPathComponent, on: h5, at: path)
    }

    private static func writeVolume(_ volume: Volume, series: Series, to h5: HDF5File, at path: String) throws {
        try h5.write(volume.values, shape: [volume.slices, volume.rows, volume.columns], to: path)
        let source =
            Set(volume.sourceFiles).count == 1
            ? volume.sourceFiles[0]
            : ((volume.sourceFiles[0] as NSString).deletingLastPathComponent)
        try attributes(series.first, geometry: volume.geometry, source: source, on: h5, at: path)
    }

    /// A NIfTI image as `/image` [z, y, x] (a 2-D image as one slice) or [z, y, x, c] for a 4-D file, with the
    /// geometry contract's attributes: `spacing` (z, y, x), `origin`, `direction`, `geometry_version` 2.
    static func writeNIfTI(source: String, to output: String, limits: ReadLimits) throws -> [String] {
        let nifti = try NIfTIImage.read(source, limits: limits)
        let (image, geometry) = (try NIfTIFormat.scanImage(nifti), nifti.geometry)
        var shape = [image.frames, image.rows, image.columns]
        if image.channels > 1 { shape.append(image.channels) }
        try HDF5File.write(to: output, updating: false) { h5 in
            try h5.write(image.values, shape: shape, to: "/image")
            try h5.setAttribute("spacing", .doubles(geometry.spacing), at: "/image")
            try h5.setAttribute("origin", .doubles(geometry.origin), at: "/image")
            try h5.setAttribute("direction", .doubles(geometry.direction), at: "/image")
            try h5.setAttribute("geometry_version", .ints([2]), at: "/image")
            try h5.setAttribute("source", .string(source), at: "/image")
        }
        return ["wrote \(output): /image \(shape.map(String.init).joined(separator: "×")) Float32"]
    }

    /// A DICOM SEG's label map (segment number = label value) on the grid of the series it references, with that
    /// series' geometry: `/labels` (uint8, uint16 above 255) with the contract's attributes, or a NIfTI label map.
    static func writeSegmentationLabels(
        seg path: String, reference: String, to output: String,
        limits: ReadLimits
    ) throws -> [String] {
        let series = try SegmentationExport.sourceSeries(reference)
        let labels = try Segmentation(path: path, limits: limits).labels(alignedTo: series)
        let (geometry, rows, columns) = (series.geometry, series.first.rows, series.first.columns)
        let wide = (labels.max() ?? 0) > 255
        if OutputFormat(path: output) == .hdf5 {
            try LabelMap(
                frames: series.slices.count, rows: rows, columns: columns, labels: labels,
                spacing: geometry.spacing
            ).write(to: output, elementType: wide ? .uint16 : .uint8) { h5 in
                try h5.setAttribute("origin", .doubles(geometry.origin), at: "/labels")
                try h5.setAttribute("direction", .doubles(geometry.direction), at: "/labels")
                try h5.setAttribute("geometry_version", .ints([2]), at: "/labels")
            }
        } else {
            try NIfTIImage.write(
                .labels(labels), dimensions: [columns, rows, series.slices.count], geometry: geometry,
                to: output)
        }
        return [
            "wrote \(output): labels of \(path) on series \(series.seriesInstanceUID) "
                + "(\(series.slices.count)×\(rows)×\(columns))"
        ]
    }

    /// A DICOM series or multi-frame file (Float32 modality values), an HDF5 label map (`/labels`, written as uint8
    /// or uint16) or image (`/image`, Float32), or a NIfTI image, as a NIfTI file with the source's geometry in both
    /// its sform and qform.
    static func writeNIfTIFile(source: String, to output: String, limits: ReadLimits) throws -> [String] {
        if isFolder(source) || (try? ImageFormats.format(of: source)) is DICOMFormat {
            // A grayscale series (or multi-frame file) as Float32 modality values with its ITK geometry.
            let volume = try Series.scan(source, limits: limits).series[0].load()
            try NIfTIImage.write(
                .float32(volume.values), dimensions: [volume.columns, volume.rows, volume.slices],
                geometry: volume.geometry, to: output)
            return [
                "wrote \(output): series \(volume.seriesInstanceUID) as \(volume.columns)×\(volume.rows)×"
                    + "\(volume.slices) Float32"
            ]
        }
        let format = try ImageFormats.format(of: source)
        if format is NRRDFormat {
            let image = try NRRDImage.read(source, limits: limits)
            let scan = try NRRDFormat.scanImage(image)
            guard scan.channels == 1 else { throw ConvertError.unsupportedOutput(output) }
            try NIfTIImage.write(
                .float32(scan.values), dimensions: [scan.columns, scan.rows, scan.frames], geometry: image.geometry,
                to: output)
            return ["wrote \(output): \(scan.columns)×\(scan.rows)×\(scan.frames) Float32"]
        }
        if format is NIfTIFormat {
            let image = try NIfTIImage.read(source, limits: limits)
            try NIfTIImage.write(
                .float32(image.values), dimensions: image.dimensions, geometry: image.geometry,
                to: output)
            return ["wrote \(output): \(image.dimensions.map(String.init).joined(separator: "×")) Float32"]
        }
        guard format is HDF5Format else { throw ConvertError.unsupportedOutput(output) }
        let file = try HDF5File.open(source)
        let dataset = file.exists("/labels") ? "/labels" : "/image"
        let shape = try file.shape(of: dataset)
        guard (2...4).contains(shape.count), dataset == "/image" || shape.count <= 3 else {
            throw InputError.invalidContent(
                file: source,
                reason: "\(dataset) has shape \(shape); expected [y, x], "
                    + "[z, y, x]" + (dataset == "/image" ? " or [z, y, x, c]" : ""))
        }
        let geometry = try StoredGeometry.read(from: file, dataset: dataset)
        let dimensions = Array((shape.count == 4 ? [shape[2], shape[1], shape[0], shape[3]] : shape.reversed()))
        if dataset == "/labels" {
            let labels = try file.read(dataset, as: Int32.self, limits: limits).values
            try NIfTIImage.write(.labels(labels), dimensions: dimensions, geometry: geometry, to: output)
        } else {
            var values = try file.read(dataset, as: Float.self, limits: limits).values
            if shape.count == 4 {  // channels last to the 4th NIfTI axis: [z, y, x, c] → [c, z, y, x]
                let (voxels, channels) = (shape[0] * shape[1] * shape[2], shape[3])
                values = (0..<(voxels * channels)).map { values[($0 % voxels) * channels + $0 / voxels] }
            }
            try NIfTIImage.write(.float32(values), dimensions: dimensions, geometry: geometry, to: output)
        }
        return ["wrote \(output): \(dataset) as \(dimensions.map(String.init).joined(separator: "×"))"]
    }

    // MARK: - PNG

    static func writePNG(
        source: String, to output: String, window: WindowChoice, frame: Int, bits: Int,
        limits: ReadLimits
    ) throws -> [String] {
        let file: DICOMFile
        let frameInFile: Int
        if isFolder(source) {
            let scan = try Series.scan(source, limits: limits)
            let series = scan.series[0]
            guard frame < series.slices.count else {
                throw ConvertError.frameOutOfRange(frame: frame, count: series.slices.count, source: source)
            }
            file = series.slices[frame].file
            frameInFile = series.slices[frame].frame
        } else {
            file = try DICOMFile(path: source, limits: limits)
            guard file.hasPixelData else { throw DICOMError.noPixelData(file: source) }
            guard frame < file.frameCount else {
                throw ConvertError.frameOutOfRange(frame: frame, count: file.frameCount, source: source)
            }
            frameInFile = frame
        }
        let image: PNGImage
        var description = ""
        if file.isColor {
            let rgb = try file.rgbFrame(frameInFile)
            let shift = UInt32(max(rgb.bitsPerSample - bits, 0))
            let up = UInt32(max(bits - rgb.bitsPerSample, 0))
            if bits == 8 {
                image = try PNGImage(
                    rows: rgb.rows, columns: rgb.columns, channels: 3,
                    samples: rgb.samples.map { UInt8(truncatingIfNeeded: $0 >> shift) })
            } else {
                // 8-bit colour widened to 16 bits as v × 257 (full range).
                image = try PNGImage(
                    rows: rgb.rows, columns: rgb.columns, channels: 3,
                    samples: rgb.samples.map {
                        up == 8 ? UInt16($0 & 0xFF) * 257 : UInt16(truncatingIfNeeded: $0 >> shift)
                    })
            }
            description = "RGB"
        } else {
            let chosen: VOIWindow?
            switch window {
            case .file:
                if let own = file.window(frame: frameInFile) {
                    chosen = own
                } else if try file.voiLookupTable() != nil {
                    chosen = nil
                } else {
                    chosen = VOIWindow.automatic(try file.modalityFrame(frameInFile))
                }
            case .automatic: chosen = VOIWindow.automatic(try file.modalityFrame(frameInFile))
            case .explicit(let value): chosen = value
            }
            let levels = try file.displayFrame(frameInFile, window: chosen, bits: bits)
            if bits == 8 {
                image = try PNGImage(
                    rows: file.rows, columns: file.columns, channels: 1,
                    samples: levels.map { UInt8(truncatingIfNeeded: $0) })
            } else {
                image = try PNGImage(rows: file.rows, columns: file.columns, channels: 1, samples: levels)
            }
            description =
                chosen.map { String(format: "window %g,%g (%@)", $0.center, $0.width, $0.function.rawValue) }
                ?? "VOI LUT Sequence"
        }
        try image.write(to: output)
        return ["wrote \(output): \(file.rows)×\(file.columns), \(bits)-bit, frame \(frame), \(description)"]
    }
}
