import Foundation
import SliceLabSupport

/// One DICOM file, opened with DCMTK: its attributes and its frames, decoded lazily one at a time.
///
/// Pixels come in three forms: stored values (`storedFrame`), modality values in physical units
/// (`modalityFrame`: Modality LUT Sequence, else Rescale Slope/Intercept applied in double, per frame where
/// Enhanced functional groups carry them) and RGB (`rgbFrame`: palette and YBR converted). Reference: PS3.3
/// C.7.6.3 (Image Pixel), C.11.1 (Modality LUT), PS3.5 8.2 (encapsulated transfer syntaxes).
// @unchecked Sendable: its properties are constants read at open; pixel decoding goes through the
// `DCMTKHandle`, whose lock serialises every DCMTK call on the file.
public final class DICOMFile: @unchecked Sendable {
    /// The path as given.
    public let path: String
    /// The main dataset's attributes.
    public let dataset: DICOMItem
    /// The transfer syntax the file was stored in.
    public let transferSyntaxUID: String
    public let rows: Int
    public let columns: Int
    public let samplesPerPixel: Int
    public let bitsAllocated: Int
    public let bitsStored: Int
    /// Pixel Representation 1: stored values are two's complement.
    public let isSigned: Bool
    /// As stored in the file (before any conversion SliceLab makes).
    public let photometricInterpretation: String
    /// 0: samples interleaved per pixel; 1: one plane per sample.
    public let planarConfiguration: Int
    /// Number of Frames, 1 when absent; 0 when the file has no Pixel Data.
    public let frameCount: Int

    let handle: DCMTKHandle
    let pixelInfo: DCMTKHandle.PixelInfo?
    let frameLock = NSLock()
    var fragmentMap: [[Int]]?
    /// Whether every JPEG fragment has been walked as DCMTK's pre-scan walks it (`validateJPEGFrame`).
    var jpegFragmentsWalked = false

    /// Element values longer than this stay on disk until read, so a file cannot make the reader allocate more
    /// than it holds (a claimed multi-gigabyte length is refused when read, not allocated at open).
    public static let maxReadLength: UInt32 = 64 * 1024
    /// Threads that decode the slices of a series together (`Series.load`) and the code blocks of a JPEG 2000
    /// frame (OpenJPEG): `SLICELAB_DECODE_THREADS` if set (1 decodes on the calling thread only), else 2 or the
    /// machine's cores if fewer.
    public static let decodeThreads: Int = {
        if let text = ProcessInfo.processInfo.environment["SLICELAB_DECODE_THREADS"], let value = Int(text),
            value >= 1
        {
            return min(value, 64)
        }
        return min(2, max(Parallel.processorCount, 1))
    }()
    /// The bound on decoded sizes this file was opened with (`--max-memory`).
    public let limits: ReadLimits

    /// Opens a DICOM file (Part 10 with meta header, or a bare dataset) and validates its image attributes.
    ///
    /// - Parameters:
    ///   - limits: bounds the decoded size of the whole file (frames × rows × columns × samples as Float32),
    ///     checked from the header before any pixel is read.
    /// - Throws: `DICOMError.unreadable` when the file is missing, not DICOM or cannot be parsed;
    ///   `.impossibleDimensions` or `.unsupportedImage` for an image no reader can hold (`.impossibleDimensions`
    ///   naming the limit for an image over it). Rests on `cdcmtk_open` (DcmFileFormat::loadFile).
    public init(path: String, limits: ReadLimits = .standard) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw DICOMError.unreadable(file: path, reason: "no such file")
        }
        let handle = try DCMTKHandle(path: path, maxReadLength: Self.maxReadLength)
        self.handle = handle
        self.path = path
        self.limits = limits
        let dataset = DICOMItem(handle: handle, pointer: handle.dataset)
        self.dataset = dataset
        let meta = DICOMItem(handle: handle, pointer: handle.meta)
        let declared = meta.string(.transferSyntaxUID) ?? ""
        transferSyntaxUID = declared.isEmpty ? handle.transferSyntaxUID : declared
        pixelInfo = try handle.pixelInfo()
        rows = dataset.int(.rows) ?? 0
        columns = dataset.int(.columns) ?? 0
        samplesPerPixel = dataset.int(.samplesPerPixel) ?? 1
        bitsAllocated = dataset.int(.bitsAllocated) ?? 0
        bitsStored = dataset.int(.bitsStored) ?? (dataset.int(.bitsAllocated) ?? 0)
        isSigned = (dataset.int(.pixelRepresentation) ?? 0) == 1
        photometricInterpretation =
            dataset.string(.photometricInterpretation)?.uppercased()
            ?? (samplesPerPixel == 3 ? "RGB" : "MONOCHROME2")
        planarConfiguration = dataset.int(.planarConfiguration) ?? 0
        if pixelInfo == nil {
            frameCount = 0
        } else {
            for (tag, name) in [(DICOMTag.rows, "Rows"), (.columns, "Columns"), (.bitsAllocated, "Bits Allocated")]
            where dataset.int(tag) == nil {
                throw DICOMError.missingAttribute(file: path, attribute: "\(name) \(tag)")
            }
            // Number of Frames is IS; a missing, empty or zero value means one frame, anything else non-numeric
            // makes the frame layout unknowable.
            let text = dataset.string(.numberOfFrames) ?? ""
            guard text.isEmpty || dataset.int(.numberOfFrames) != nil else {
                throw DICOMError.missingAttribute(file: path, attribute: "Number of Frames (0028,0008) '\(text)'")
            }
            let declaredFrames = dataset.int(.numberOfFrames) ?? 1
            frameCount = declaredFrames == 0 ? 1 : declaredFrames
            try validateImage()
        }
    }

    /// Whether the file holds an image (Pixel Data).
    public var hasPixelData: Bool { pixelInfo != nil }

    /// Whether frames decode to RGB (RGB, YBR_*, PALETTE COLOR) rather than one grey value per pixel.
    public var isColor: Bool { samplesPerPixel == 3 || photometricInterpretation == "PALETTE COLOR" }

    /// The attributes of the file meta information (group 0002).
    public var meta: DICOMItem { DICOMItem(handle: handle, pointer: handle.meta) }

    /// A text dump of every attribute (long values shortened). Rests on `cdcmtk_dump`.
    public func headerDump() -> String { handle.dump() }

    /// Bytes of one native frame (for 1-bit images, rounded up).
    var frameBytes: Int { (rows * columns * samplesPerPixel * bitsAllocated + 7) / 8 }

    private func validateImage() throws {
        guard rows > 0, columns > 0 else {
            throw DICOMError.impossibleDimensions(file: path, reason: "\(rows) rows × \(columns) columns")
        }
        guard frameCount > 0, frameCount <= 1_000_000 else {
            throw DICOMError.impossibleDimensions(file: path, reason: "\(frameCount) frames")
        }
        guard [1, 8, 16, 32].contains(bitsAllocated) else {
            throw DICOMError.unsupportedImage(file: path, reason: "Bits Allocated \(bitsAllocated) (1, 8, 16 or 32)")
        }
        guard bitsStored >= 1, bitsStored <= bitsAllocated else {
            throw DICOMError.unsupportedImage(
                file: path, reason: "Bits Stored \(bitsStored) with Bits Allocated \(bitsAllocated)")
        }
        guard samplesPerPixel == 1 || samplesPerPixel == 3 else {
            throw DICOMError.unsupportedImage(file: path, reason: "Samples per Pixel \(samplesPerPixel) (1 or 3)")
        }
        // One frame first (before the file's own length is compared, which a claimed frame size could overflow),
        // then, once Pixel Data is known to hold them, every frame together.
        try checkLimit(
            [rows, columns, samplesPerPixel],
            what: frameCount > 1 ? "one of the \(frameCount) frames" : "the image")
        guard let info = pixelInfo else { return }
        if !info.encapsulated {
            let (total, totalOverflow) = frameBytes.multipliedReportingOverflow(by: frameCount)
            let needed = bitsAllocated == 1 ? (rows * columns * samplesPerPixel * frameCount + 7) / 8 : total
            guard !totalOverflow else {
                throw DICOMError.impossibleDimensions(file: path, reason: "\(frameCount) frames overflow")
            }
            // YBR_FULL_422 stores two samples per pixel.
            let expected = photometricInterpretation == "YBR_FULL_422" ? needed * 2 / 3 : needed
            guard info.length >= expected else {
                throw DICOMError.shortPixelData(file: path, expectedBytes: expected, actualBytes: info.length)
            }
        } else if info.fragmentCount == 0 {
            throw DICOMError.shortPixelData(file: path, expectedBytes: 1, actualBytes: 0)
        }
        if frameCount > 1 {
            try checkLimit(
                [frameCount, rows, columns, samplesPerPixel],
                what: "\(frameCount) frames of \(rows) × \(columns)")
        }
    }

    /// Checks decoded values (as Float32) against `limits`.
    /// - Throws: `DICOMError.impossibleDimensions` whose reason names the limit.
    private func checkLimit(_ extents: [Int], what: String) throws {
        do { try limits.check(extents, bytesPerValue: 4, file: path, what: what) } catch let ReadLimitError.tooLarge(
            _, reason)
        {
            throw DICOMError.impossibleDimensions(file: path, reason: reason)
        }
    }

    // MARK: - Geometry and rescale

    /// Pixel Spacing in millimetres, (row spacing, column spacing), from the Pixel Measures functional group
    /// of frame 0 where present; nil when the file has none.
    public var pixelSpacing: (row: Double, column: Double)? { pixelSpacing(frame: 0) }

    /// Pixel spacing of one frame (Enhanced per-frame or shared Pixel Measures, else the top-level attribute).
    public func pixelSpacing(frame: Int) -> (row: Double, column: Double)? {
        let spacing =
            functionalGroupValue(frame: frame, sequence: .pixelMeasuresSequence) {
                $0.doubles(.pixelSpacing)
            } ?? dataset.doubles(.pixelSpacing)
        guard let spacing, spacing.count >= 2, spacing[0] > 0, spacing[1] > 0 else { return nil }
        return (spacing[0], spacing[1])
    }

    /// Slice Thickness in millimetres (functional group of the frame where present).
    public func sliceThickness(frame: Int = 0) -> Double? {
        functionalGroupValue(frame: frame, sequence: .pixelMeasuresSequence) { $0.double(.sliceThickness) }
            ?? dataset.double(.sliceThickness)
    }

    /// Image Position (Patient) of a frame's first pixel in millimetres.
    public func imagePosition(frame: Int = 0) -> [Double]? {
        let value =
            functionalGroupValue(frame: frame, sequence: .planePositionSequence) {
                $0.doubles(.imagePositionPatient)
            } ?? dataset.doubles(.imagePositionPatient)
        guard let value, value.count == 3 else { return nil }
        return value
    }

    /// Image Orientation (Patient): the row direction cosines then the column direction cosines.
    public func imageOrientation(frame: Int = 0) -> [Double]? {
        let value =
            functionalGroupValue(frame: frame, sequence: .planeOrientationSequence) {
                $0.doubles(.imageOrientationPatient)
            } ?? dataset.doubles(.imageOrientationPatient)
        guard let value, value.count == 6 else { return nil }
        return value
    }

    /// Rescale slope and intercept of one frame: the frame's Pixel Value Transformation functional group, else
    /// the shared one, else the top-level attributes; nil when none is present.
    public func rescale(frame: Int) -> (slope: Double, intercept: Double)? {
        if let pair = functionalGroupValue(
            frame: frame, sequence: .pixelValueTransformationSequence,
            {
                item -> (Double, Double)? in
                guard let slope = item.double(.rescaleSlope), let intercept = item.double(.rescaleIntercept)
                else { return nil }
                return (slope, intercept)
            })
        {
            return pair
        }
        guard let slope = dataset.double(.rescaleSlope), let intercept = dataset.double(.rescaleIntercept)
        else { return nil }
        return (slope, intercept)
    }

    /// Reads a value from a functional group macro: the frame's Per-frame Functional Groups item first, then
    /// the Shared Functional Groups.
    func functionalGroupValue<T>(frame: Int, sequence: DICOMTag, _ read: (DICOMItem) -> T?) -> T? {
        if let perFrame = dataset.item(.perFrameFunctionalGroupsSequence, index: frame),
            let macro = perFrame.item(sequence), let value = read(macro)
        {
            return value
        }
        if let shared = dataset.item(.sharedFunctionalGroupsSequence), let macro = shared.item(sequence),
            let value = read(macro)
        {
            return value
        }
        return nil
    }

    // MARK: - Frames

    /// Stored values of one frame, row-major; for colour images the samples interleaved per pixel
    /// ([rows, columns, samples]) as stored, before any colour conversion except decompression's own.
    ///
    /// - Throws: `DICOMError.frameOutOfRange`, `.noPixelData`, `.shortPixelData`, `.decodeFailed`,
    ///   `.unsupportedTransferSyntax`. Rests on `cdcmtk_read_pixels`, `cdcmtk_decode_frame`, `opj_decode`.
    public func storedFrame(_ index: Int) throws -> [Float] {
        try decodeFrame(index).samples.map { Float($0) }
    }

    /// Modality values of one grayscale frame in physical units (Hounsfield units for CT), row-major
    /// [rows, columns]: the Modality LUT Sequence if present, else stored × slope + intercept in double
    /// (per frame where the functional groups carry it), rounded once to Float32. Matches pydicom's
    /// `apply_modality_lut`.
    ///
    /// - Throws: `DICOMError.unsupportedImage` for colour images, and what `storedFrame` throws.
    public func modalityFrame(_ index: Int) throws -> [Float] {
        let count = rows * columns
        return try [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
            try modalityFrame(index, into: buffer)
            initialized = count
        }
    }

    /// `modalityFrame` through the general decoder (stored values as Int64, then the modality LUT): every
    /// photometric interpretation, transfer syntax and Bits Allocated.
    func modalityFrameThroughStoredValues(_ index: Int) throws -> [Float] {
        guard !isColor else {
            throw DICOMError.unsupportedImage(
                file: path, reason: "\(photometricInterpretation) is colour; use rgbFrame for its pixels")
        }
        let decoded = try decodeFrame(index)
        if let lut = try modalityLUT() {
            return decoded.samples.map { Float(lut.apply(Int($0))) }
        }
        guard let (slope, intercept) = rescale(frame: index) else { return decoded.samples.map { Float($0) } }
        return decoded.samples.map { Float(Double($0) * slope + intercept) }
    }

    /// The Modality LUT of the dataset, if it has a Modality LUT Sequence.
    func modalityLUT() throws -> LookupTable? {
        guard let item = dataset.item(.modalityLUTSequence) else { return nil }
        return try LookupTable(item: item, file: path)
    }

    /// One frame as RGB: row-major [rows, columns, 3], samples of `bitsPerSample` bits (8, 16 or 32).
    /// Palette colour is looked up, YBR_FULL and YBR_FULL_422 converted as pydicom converts them, planar
    /// configuration 1 interleaved; YBR_ICT and YBR_RCT arrive as RGB from the JPEG 2000 decoder.
    ///
    /// - Throws: `DICOMError.unsupportedImage` for grayscale images, and what `storedFrame` throws.
    public func rgbFrame(_ index: Int) throws -> RGBFrame {
        guard isColor else {
            throw DICOMError.unsupportedImage(
                file: path, reason: "\(photometricInterpretation) is grayscale; use modalityFrame for its pixels")
        }
        let decoded = try decodeFrame(index)
        switch decoded.photometric {
        case "PALETTE COLOR":
            let palette = try Palette(dataset: dataset, file: path)
            return palette.apply(decoded.samples, rows: rows, columns: columns)
        case "RGB", "YBR_ICT", "YBR_RCT":
            return RGBFrame(
                rows: rows, columns: columns, bitsPerSample: bitsAllocated,
                samples: decoded.samples.map { UInt32(truncatingIfNeeded: $0) })
        case "YBR_FULL", "YBR_FULL_422":
            return RGBFrame(
                rows: rows, columns: columns, bitsPerSample: bitsAllocated,
                samples: ColorSpace.ybrFullToRGB(decoded.samples, bitsAllocated: bitsAllocated))
        default:
            throw DICOMError.unsupportedImage(
                file: path, reason: "photometric interpretation \(decoded.photometric) cannot be shown as RGB")
        }
    }

    /// A decoded frame: stored values (masked to Bits Stored, sign-extended), interleaved per pixel, and the
    /// photometric interpretation they are in.
    struct DecodedFrame {
        var samples: [Int64]
        var photometric: String
    }

    func decodeFrame(_ index: Int) throws -> DecodedFrame {
        guard let info = pixelInfo else { throw DICOMError.noPixelData(file: path) }
        guard index >= 0, index < frameCount else {
            throw DICOMError.frameOutOfRange(file: path, frame: index, frameCount: frameCount)
        }
        frameLock.lock()
        defer { frameLock.unlock() }
        if !info.encapsulated {
            return try nativeFrame(index, pixelDataLength: info.length)
        }
        let syntax = TransferSyntax(uid: transferSyntaxUID)
        switch syntax.codec {
        case .jpeg2000:
            let codestream = try frameCodestream(index, fragmentCount: info.fragmentCount)
            return try JPEG2000Decoder.decode(codestream, file: self, frame: index)
        case .dcmtk:
            try validateBeforeDCMTK(index, fragmentCount: info.fragmentCount)
            return try dcmtkFrame(index)
        case .none:
            throw DICOMError.unsupportedTransferSyntax(uid: transferSyntaxUID, file: path)
        }
    }
}

/// An RGB frame: row-major [rows, columns, 3] samples of `bitsPerSample` bits.
public struct RGBFrame: Sendable, Equatable {
    public let rows: Int
    public let columns: Int
    /// 8, 16 or 32.
    public let bitsPerSample: Int
    public let samples: [UInt32]
}
