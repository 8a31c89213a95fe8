import CNIfTI
import Foundation
import SliceLabSupport

/// What a NIfTI-1 or NIfTI-2 header (`.nii`, `.nii.gz`; single-file, "n+1" / "n+2") says, read through
/// nifti_clib after SliceLab has checked it: sizes, datatype and geometry, no voxels.
public struct NIfTIHeader: Sendable {
    public let path: String
    /// 1 or 2.
    public let version: Int
    /// nx, ny, nz, nt, … as the header's `dim[1...dim[0]]`.
    public let dimensions: [Int]
    /// The header's NIFTI_TYPE code.
    public let datatype: Int
    public let geometry: VolumeGeometry
    /// The header's qform and sform codes, and which of the two gave `geometry` ("sform", "qform" or "none").
    public let qformCode: Int, sformCode: Int, geometrySource: String
    /// Where the voxels lie once the file is decompressed, and whether it is gzip-compressed.
    let layout: cnifti_layout, compressed: Bool

    /// Reads and checks the header at `path` (sizes, datatype, offsets, the file's length, `limits` on the
    /// decoded Float32 size).
    ///
    /// - Throws: `ImageFileError.unreadable` naming the file and the cause, `.tooLarge` over `limits`.
    ///   Rests on `nifti_image_read`.
    public static func read(_ path: String, limits: ReadLimits = .standard) throws -> NIfTIHeader {
        var header = cnifti_header()
        var message = [CChar](repeating: 0, count: 512)
        let status = cnifti_read_header(path, Int64(limits.maxBytes), &header, &message, message.count)
        if status == -2 {
            throw ImageFileError.tooLarge(
                file: path,
                reason: String(nulTerminated: message)
                    + (limits.remedy.map { " (\($0))" } ?? ""))
        }
        guard status == 0 else { throw ImageFileError.unreadable(file: path, reason: String(nulTerminated: message)) }
        func array<Tuple, Element>(_ tuple: Tuple, of _: Element.Type) -> [Element] {
            withUnsafeBytes(of: tuple) { Array($0.bindMemory(to: Element.self)) }
        }
        let dim = array(header.dim, of: Int64.self).map { Int($0) }
        let (geometry, source) = NIfTIImage.geometry(
            pixdim: array(header.pixdim, of: Double.self), dimensionCount: dim[0],
            qformCode: Int(header.qform_code), qto: array(header.qto_xyz, of: Double.self),
            sformCode: Int(header.sform_code), sto: array(header.sto_xyz, of: Double.self))
        return NIfTIHeader(
            path: path, version: Int(header.version), dimensions: Array(dim[1...dim[0]]),
            datatype: Int(header.datatype), geometry: geometry, qformCode: Int(header.qform_code),
            sformCode: Int(header.sform_code), geometrySource: source, layout: header.layout,
            compressed: header.compressed != 0)
    }
}

/// A NIfTI file's voxels read a run at a time, in the file's order, so a volume segmented slice by slice is
/// never in memory whole: a `.nii.gz` is inflated as it is read (zlib), forward runs continue the stream and a
/// backward run restarts it. Values are `NIfTIImage.read`'s, run by run.
public final class NIfTIVoxelStream {
    public let header: NIfTIHeader
    private let stream: OpaquePointer

    /// Opens `path` after checking its header (`NIfTIHeader.read`).
    ///
    /// - Throws: `ImageFileError.unreadable` naming the file and the cause, `.tooLarge` over `limits`.
    public convenience init(_ path: String, limits: ReadLimits = .standard) throws {
        try self.init(header: NIfTIHeader.read(path, limits: limits))
    }

    /// Opens the file of a header already read and checked.
    ///
    /// - Throws: `ImageFileError.unreadable` naming the file when it cannot be opened.
    public init(header: NIfTIHeader) throws {
        self.header = header
        var message = [CChar](repeating: 0, count: 512)
        var layout = header.layout
        guard let opened = cnifti_stream_open(header.path, &layout, &message, message.count) else {
            throw ImageFileError.unreadable(file: header.path, reason: String(nulTerminated: message))
        }
        stream = opened
    }

    deinit { cnifti_stream_close(stream) }

    /// Voxels `first ..< first + count` as Float32 after `scl_slope`/`scl_inter`.
    ///
    /// - Throws: `ImageFileError.unreadable` naming the file when it ends early (a truncated or corrupt file).
    public func read(first: Int, count: Int) throws -> [Float] {
        var message = [CChar](repeating: 0, count: 512)
        var status: Int32 = 0
        let values = [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
            status = cnifti_stream_read(
                stream, Int64(first), Int64(count), buffer.baseAddress, &message,
                message.count)
            initialized = count  // thrown away below unless every value was written
        }
        guard status == 0 else {
            throw ImageFileError.unreadable(file: header.path, reason: String(nulTerminated: message))
        }
        return values
    }
}

/// A NIfTI image: its header and its voxels.
///
/// `values` are Float32 after `scl_slope`/`scl_inter` (slope 0: unscaled, as the standard says) in the file's
/// order, x fastest: row-major [w…, t, z, y, x], which is SimpleITK's `GetArrayFromImage` order. A 4-D file's
/// 4th axis is left to the caller (channels, as the Medical Segmentation Decathlon stores modalities).
public struct NIfTIImage: Sendable {
    public let header: NIfTIHeader
    public let values: [Float]

    public var path: String { header.path }
    public var dimensions: [Int] { header.dimensions }
    public var geometry: VolumeGeometry { header.geometry }

    /// Whether `head`, the first bytes of a file (gzip-compressed or not), starts a NIfTI header.
    /// Rests on `cnifti_sniff`.
    public static func recognizes(_ head: [UInt8]) -> Bool {
        head.withUnsafeBufferPointer { cnifti_sniff($0.baseAddress, $0.count) == 1 }
    }

    /// Reads the image at `path`: its header is checked and read (`NIfTIHeader.read`, which also gives where the
    /// voxels lie); then the file is mapped and, when compressed, inflated whole by libdeflate (a gzip
    /// that libdeflate cannot take in one buffer goes through nifti_clib's streaming reader), and the voxels are
    /// converted to Float32 in one pass.
    ///
    /// - Throws: `ImageFileError.unreadable` naming the file and the cause, `.tooLarge` over `limits`.
    ///   Rests on `nifti_image_read`, `libdeflate_gzip_decompress_ex`.
    public static func read(_ path: String, limits: ReadLimits = .standard) throws -> NIfTIImage {
        let header = try NIfTIHeader.read(path, limits: limits)
        var message = [CChar](repeating: 0, count: 512)
        var layout = header.layout
        let count = Int(layout.count)
        let file: Data
        do { file = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) } catch {
            throw ImageFileError.unreadable(file: path, reason: "cannot read the file: \(error.localizedDescription)")
        }
        let needed = Int(layout.offset) + count * Int(layout.bytes_per_voxel)
        // Voxels of up to 4 bytes are inflated into the tail of the Float32 array itself and widened front to
        // back (each value is read before its wider result can reach it), so no second volume is allocated.
        let inPlace = needed <= count * MemoryLayout<Float>.size
        var values = [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
            adviseHugePages(UnsafeMutableRawBufferPointer(buffer))
            initialized = count  // every value is written below, or the array is thrown away with an error
        }
        var status: Int32 = 0
        var corrupt = false
        values.withUnsafeMutableBytes { storage in
            let out = storage.bindMemory(to: Float.self).baseAddress
            func convert(_ bytes: UnsafeRawBufferPointer) -> Int32 {
                cnifti_convert(
                    bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &layout, out, &message,
                    message.count)
            }
            if !header.compressed {
                status = file.withUnsafeBytes(convert)
                return
            }
            let separate: UnsafeMutableRawBufferPointer? = inPlace ? nil : .allocate(byteCount: needed, alignment: 16)
            defer { separate?.deallocate() }
            if let separate { adviseHugePages(separate) }
            let target = separate ?? UnsafeMutableRawBufferPointer(rebasing: storage[(storage.count - needed)...])
            switch file.withUnsafeBytes({ Gzip.inflate($0, into: target) }) {
            case .inflated(let produced):
                status = convert(UnsafeRawBufferPointer(rebasing: target[..<produced]))
            case .corrupt: corrupt = true
            case .needsStreaming:
                status = cnifti_read_values(path, out, Int64(count), &message, message.count)
            }
        }
        if corrupt { throw ImageFileError.unreadable(file: path, reason: "corrupt or truncated gzip stream") }
        guard status == 0 else { throw ImageFileError.unreadable(file: path, reason: String(nulTerminated: message)) }
        return NIfTIImage(header: header, values: values)
    }

    /// ITK's reading of a header's geometry (`itk::NiftiImageIO`, ITK 5): spacing from `pixdim`; rotation and
    /// origin from the sform when its code is set and its 3 × 3 part, divided by the spacing, is a rotation
    /// (within 1e-4), else from the qform when its code is set, else none (origin 0, axes along R, A, S);
    /// then RAS to LPS (x and y negated).
    static func geometry(
        pixdim: [Double], dimensionCount: Int, qformCode: Int, qto: [Double], sformCode: Int,
        sto: [Double]
    ) -> (VolumeGeometry, String) {
        let spacingXYZ = (1...3).map { axis in
            axis <= dimensionCount && pixdim[axis] > 0 ? pixdim[axis] : 1
        }
        func rotation(_ matrix: [Double]) -> [Double]? {
            var columns = [Double](repeating: 0, count: 9)
            for row in 0..<3 {
                for column in 0..<3 { columns[row * 3 + column] = matrix[row * 4 + column] / spacingXYZ[column] }
            }
            for a in 0..<3 {
                for b in 0..<3 {
                    let dot = (0..<3).reduce(0.0) { $0 + columns[$1 * 3 + a] * columns[$1 * 3 + b] }
                    if abs(dot - (a == b ? 1 : 0)) > 1e-4 { return nil }
                }
            }
            return columns
        }
        var source = "none"
        var rasDirection: [Double] = [1, 0, 0, 0, 1, 0, 0, 0, 1]
        var rasOrigin: [Double] = [0, 0, 0]
        if sformCode > 0, let columns = rotation(sto) {
            (source, rasDirection, rasOrigin) = ("sform", columns, [sto[3], sto[7], sto[11]])
        } else if qformCode > 0 {
            // nifti_clib's qto_xyz is R · diag(dx, dy, qfac·dz): normalise each column to a unit vector.
            var columns = [Double](repeating: 0, count: 9)
            for column in 0..<3 {
                let norm = (0..<3).reduce(0.0) { $0 + qto[$1 * 4 + column] * qto[$1 * 4 + column] }.squareRoot()
                for row in 0..<3 { columns[row * 3 + column] = norm > 0 ? qto[row * 4 + column] / norm : 0 }
            }
            (source, rasDirection, rasOrigin) = ("qform", columns, [qto[3], qto[7], qto[11]])
        }
        // x and y negated; + 0 turns negative zeros into zeros.
        let direction = rasDirection.enumerated().map { $0.offset < 6 ? -$0.element + 0 : $0.element + 0 }
        let origin = [-rasOrigin[0] + 0, -rasOrigin[1] + 0, rasOrigin[2] + 0]
        return (VolumeGeometry(spacing: spacingXYZ.reversed(), origin: origin, direction: direction), source)
    }
}

// MARK: - Writing

extension NIfTIImage {
    /// What a NIfTI file holds, for writing: Float32 images, or label maps, written as uint8 when every label is
    /// at most 255, else as uint16; a label map may come in the type it is written in (a quarter or a half of the
    /// memory of `Int32`s: a segmented volume's labels are accumulated so).
    public enum Voxels {
        case float32([Float])
        case labels([Int32])
        case uint8Labels([UInt8])
        case uint16Labels([UInt16])
    }

    /// Writes a single-file NIfTI-1 image atomically, gzip-compressed when `path` ends in ".gz": `dimensions`
    /// nx, ny, nz (and channels as the 4th axis), values x fastest, with `geometry` as both the sform and the
    /// qform (codes as given; 1, scanner anatomical, by default).
    ///
    /// - Throws: `ImageFileError.invalidArgument` for values that do not fill the dimensions or labels outside
    ///   0...65535, `.unwritable` naming `path`. Rests on `nifti_image_write`.
    public static func write(
        _ voxels: Voxels, dimensions: [Int], geometry: VolumeGeometry, to path: String,
        qformCode: Int = 1, sformCode: Int = 1
    ) throws {
        let count = dimensions.reduce(1, *)
        let extent = "\(dimensions.map(String.init).joined(separator: " × "))"
        let sto = rasMatrix(geometry)
        let suffix = path.lowercased().hasSuffix(".gz") ? ".nii.gz" : ".nii"
        var message = [CChar](repeating: 0, count: 512)
        func write(_ pointer: UnsafeRawPointer?, _ datatype: Int32, into temporary: String) -> Int32 {
            cnifti_write(
                temporary, dimensions.map { Int64($0) }, Int32(dimensions.count), datatype, pointer, sto,
                Int32(qformCode), Int32(sformCode), &message, message.count)
        }
        let filling = "\(count) labels must fill \(extent)"
        try writeAtomically(to: path) { temporary in
            let named = temporary + suffix  // nifti_clib compresses by name
            func bytes(_ labels: [UInt8]) -> Int32 { labels.withUnsafeBytes { write($0.baseAddress, 2, into: named) } }
            func shorts(_ labels: [UInt16]) -> Int32 {
                labels.withUnsafeBytes { write($0.baseAddress, 512, into: named) }
            }
            defer { unlink(named) }
            let status: Int32
            switch voxels {
            case .float32(let values):
                guard values.count == count else {
                    throw ImageFileError.invalidArgument("\(values.count) values cannot fill \(extent)")
                }
                status = values.withUnsafeBytes { write($0.baseAddress, 16, into: named) }
            case .labels(let labels):
                guard labels.count == count, let largest = labels.max(), let smallest = labels.min(),
                    smallest >= 0, largest <= 65535
                else {
                    throw ImageFileError.invalidArgument("labels must fill \(extent) with values in 0...65535")
                }
                status = largest <= 255 ? bytes(labels.map { UInt8($0) }) : shorts(labels.map { UInt16($0) })
            case .uint8Labels(let labels):
                guard labels.count == count else { throw ImageFileError.invalidArgument(filling) }
                status = bytes(labels)
            case .uint16Labels(let labels):
                guard labels.count == count else { throw ImageFileError.invalidArgument(filling) }
                status = labels.allSatisfy({ $0 <= 255 }) ? bytes(labels.map { UInt8($0) }) : shorts(labels)
            }
            guard status == 0, rename(named, temporary) == 0 else {
                throw ImageFileError.unwritable(file: path, reason: String(nulTerminated: message))
            }
        }
    }

    /// The RAS voxel-to-world matrix (row-major 4 × 4) of a geometry: LPS to RAS, columns scaled by spacing.
    static func rasMatrix(_ geometry: VolumeGeometry) -> [Double] {
        let spacingXYZ = Array(geometry.spacing.reversed())
        var matrix = [Double](repeating: 0, count: 16)
        for row in 0..<3 {
            let flip: Double = row < 2 ? -1 : 1
            for column in 0..<3 {
                matrix[row * 4 + column] = flip * geometry.direction[row * 3 + column] * spacingXYZ[column]
            }
            matrix[row * 4 + 3] = flip * geometry.origin[row]
        }
        matrix[15] = 1
        return matrix
    }
}
