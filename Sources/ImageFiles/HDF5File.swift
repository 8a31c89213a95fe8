import CHDF5
import Foundation
import SliceLabSupport

/// Element types SliceLab stores in HDF5 datasets.
public enum HDF5ElementType: String, Sendable, CaseIterable {
    case uint8, uint16, int32, int64, float32, float64

    var nativeType: hid_t {
        switch self {
        case .uint8: return chdf5_native_uint8()
        case .uint16: return chdf5_native_uint16()
        case .int32: return chdf5_native_int32()
        case .int64: return chdf5_native_int64()
        case .float32: return chdf5_native_float()
        case .float64: return chdf5_native_double()
        }
    }
}

/// A Swift type stored as an HDF5 numeric element. Reading converts from whatever numeric type the file
/// holds (HDF5's own conversion, with clipping for integers).
public protocol HDF5Scalar: Numeric, Sendable {
    static var hdf5ElementType: HDF5ElementType { get }
}

extension UInt8: HDF5Scalar { public static var hdf5ElementType: HDF5ElementType { .uint8 } }
extension UInt16: HDF5Scalar { public static var hdf5ElementType: HDF5ElementType { .uint16 } }
extension Int32: HDF5Scalar { public static var hdf5ElementType: HDF5ElementType { .int32 } }
extension Int64: HDF5Scalar { public static var hdf5ElementType: HDF5ElementType { .int64 } }
extension Float: HDF5Scalar { public static var hdf5ElementType: HDF5ElementType { .float32 } }
extension Double: HDF5Scalar { public static var hdf5ElementType: HDF5ElementType { .float64 } }

/// An N-dimensional array read from HDF5: row-major (C order) values and their shape.
public struct HDF5Array<Element: HDF5Scalar>: Equatable {
    public var values: [Element]
    public var shape: [Int]

    public init(values: [Element], shape: [Int]) {
        self.values = values
        self.shape = shape
    }
}

/// An attribute value: a scalar, an array or strings.
public enum HDF5AttributeValue: Equatable, Sendable {
    case int(Int64)
    case double(Double)
    case string(String)
    case ints([Int64])
    case doubles([Double])
    case strings([String])

    /// The value as a string, if it is one.
    public var stringValue: String? {
        switch self {
        case .string(let s): return s
        case .strings(let s) where s.count == 1: return s[0]
        default: return nil
        }
    }

    /// The value as doubles (integers widened, a scalar as one element).
    public var doubleValues: [Double]? {
        switch self {
        case .int(let v): return [Double(v)]
        case .double(let v): return [v]
        case .ints(let v): return v.map(Double.init)
        case .doubles(let v): return v
        default: return nil
        }
    }
}

/// What an HDF5 path names.
public enum HDF5ObjectKind: Sendable { case group, dataset }

/// Every half-precision bit pattern widened to Float (exactly), made on first use: a table lookup instead of a call
/// to the runtime's software conversion per value.
private let halfToFloat: [Float] = (0...Int(UInt16.max)).map { Float(Float16(bitPattern: UInt16($0))) }

/// An open HDF5 file. Read with `HDF5File.open(_:)`; write with `HDF5File.write(to:updating:_:)`, which is
/// atomic. Paths are absolute within the file ("/runs/a/metrics/dice"); intermediate groups are created as
/// needed on writing.
public final class HDF5File {
    /// The file's path on disk as the user gave it (the destination, when writing).
    public let path: String
    let handle: HDF5Handle

    private init(path: String, handle: HDF5Handle) {
        self.path = path
        self.handle = handle
    }

    // MARK: - Opening

    /// Opens an existing file for reading.
    ///
    /// The file is walked in a child process first (`hdf5ProbeInChildProcess`): a file that crashes the HDF5
    /// library is refused with an error instead.
    ///
    /// - Throws: `ImageFileError.unreadable` when the file is missing, not HDF5, or crashes the library. Rests on
    ///   `H5Fopen`.
    public static func open(_ path: String) throws -> HDF5File {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ImageFileError.unreadable(file: path, reason: "no such readable file")
        }
        hdf5PrepareThread()
        guard H5Fis_hdf5(path) > 0 else {
            hdf5Message()
            throw ImageFileError.unreadable(file: path, reason: "not an HDF5 file")
        }
        try hdf5ProbeInChildProcess(path)
        let handle = try hdf5Open(path, "opening", close: H5Fclose) {
            H5Fopen(path, chdf5_acc_rdonly(), chdf5_p_default())
        }
        return HDF5File(path: path, handle: handle)
    }

    /// Writes a file atomically. With `updating` and an existing file at `path`, `body` sees a copy of it and
    /// everything it does not change is kept; otherwise it starts from an empty file. The result replaces
    /// `path` only when `body` returns and the file is closed; on any error the previous file is intact.
    ///
    /// - Throws: `ImageFileError.unwritable`, or what `body` throws. Rests on `H5Fcreate`, `H5Fopen`, `H5Fclose`,
    ///   `rename`.
    public static func write(to path: String, updating: Bool = true, _ body: (HDF5File) throws -> Void) throws {
        try writeAtomically(to: path) { temporary in
            let handle: HDF5Handle
            if updating && FileManager.default.fileExists(atPath: path) {
                _ = try HDF5File.open(path)  // refuse to update something that is not HDF5
                do {
                    try FileManager.default.copyItem(atPath: path, toPath: temporary)
                } catch {
                    throw ImageFileError.unwritable(file: path, reason: "cannot copy for update: \(error)")
                }
                handle = try hdf5Open(path, "opening for update", close: H5Fclose) {
                    H5Fopen(temporary, chdf5_acc_rdwr(), chdf5_p_default())
                }
            } else {
                handle = try hdf5Open(path, "creating", close: H5Fclose) {
                    H5Fcreate(temporary, chdf5_acc_trunc(), chdf5_p_default(), chdf5_p_default())
                }
            }
            let file = HDF5File(path: path, handle: handle)
            try body(file)
            try hdf5Check(path, "flushing", writing: true) { H5Fflush(handle.id, H5F_SCOPE_GLOBAL) }
            // Closing writes the last metadata: a failure here must stop the rename.
            try hdf5Check(path, "closing", writing: true) { handle.close() }
        }
    }

    // MARK: - Structure

    /// Whether `path` names an object (every intermediate group must exist too).
    public func exists(_ path: String) -> Bool {
        hdf5PrepareThread()
        let parts = components(path)
        var prefix = ""
        for part in parts {
            prefix += "/" + part
            guard H5Lexists(handle.id, prefix, chdf5_p_default()) > 0,
                H5Oexists_by_name(handle.id, prefix, chdf5_p_default()) > 0
            else {
                hdf5Message()
                return false
            }
        }
        return true
    }

    /// Whether `path` is a group or a dataset. Rests on `H5Iget_type`.
    public func kind(of path: String) throws -> HDF5ObjectKind {
        if components(path).isEmpty { return .group }
        let object = try openObject(self, path)
        switch H5Iget_type(object.id) {
        case H5I_GROUP: return .group
        case H5I_DATASET: return .dataset
        default: throw ImageFileError.typeMismatch(file: self.path, object: path, reason: "neither group nor dataset")
        }
    }

    /// Names of the links directly inside the group at `path`, in creation-independent (name) order.
    /// Rests on `H5Lget_name_by_idx`.
    public func children(of path: String = "/") throws -> [String] {
        let groupPath = components(path).isEmpty ? "/" : path
        guard groupPath == "/" || exists(groupPath) else { throw ImageFileError.missing(file: self.path, object: path) }
        let group = try hdf5Open(self.path, "opening group \(groupPath)", close: H5Gclose) {
            H5Gopen2(handle.id, groupPath, chdf5_p_default())
        }
        var info = H5G_info_t()
        try hdf5Check(self.path, "listing \(groupPath)") { H5Gget_info(group.id, &info) }
        return try (0..<info.nlinks).map { index in
            let length = H5Lget_name_by_idx(
                group.id, ".", H5_INDEX_NAME, H5_ITER_INC, index, nil, 0,
                chdf5_p_default())
            guard length >= 0 else {
                throw ImageFileError.unreadable(file: self.path, reason: "listing \(groupPath): \(hdf5Message())")
            }
            var name = [CChar](repeating: 0, count: Int(length) + 1)
            _ = H5Lget_name_by_idx(
                group.id, ".", H5_INDEX_NAME, H5_ITER_INC, index, &name, name.count,
                chdf5_p_default())
            return String(nulTerminated: name)
        }
    }

    /// Creates the group at `path` and any missing parents; an existing group is left as it is.
    public func createGroup(_ path: String) throws {
        var prefix = ""
        for part in components(path) {
            prefix += "/" + part
            if exists(prefix) {
                guard try kind(of: prefix) == .group else {
                    throw ImageFileError.typeMismatch(
                        file: self.path, object: prefix, reason: "is a dataset, not a group")
                }
                continue
            }
            _ = try hdf5Open(self.path, "creating group \(prefix)", close: H5Gclose) {
                H5Gcreate2(handle.id, prefix, chdf5_p_default(), chdf5_p_default(), chdf5_p_default())
            }
        }
    }

    /// Removes the link at `path` (a dataset or a whole group). Rests on `H5Ldelete`.
    public func remove(_ path: String) throws {
        guard exists(path) else { throw ImageFileError.missing(file: self.path, object: path) }
        try hdf5Check(self.path, "removing \(path)", writing: true) { H5Ldelete(handle.id, path, chdf5_p_default()) }
    }

    /// Makes `path` a second name of the object at `target` (a hard link: the same dataset with its attributes,
    /// stored once), replacing any object at `path`. Rests on `H5Lcreate_hard`.
    public func link(_ path: String, to target: String) throws {
        guard exists(target) else { throw ImageFileError.missing(file: self.path, object: target) }
        try prepareParent(of: path)
        try hdf5Check(self.path, "linking \(path) to \(target)", writing: true) {
            H5Lcreate_hard(handle.id, target, handle.id, path, chdf5_p_default(), chdf5_p_default())
        }
    }

    func components(_ path: String) -> [String] {
        path.split(separator: "/").map(String.init)
    }

    private func prepareParent(of path: String) throws {
        let parts = components(path)
        guard !parts.isEmpty else { throw ImageFileError.invalidArgument("\(self.path): empty dataset path") }
        try createGroup("/" + parts.dropLast().joined(separator: "/"))
        if exists(path) { try remove(path) }
    }

    // MARK: - Numeric datasets

    /// Writes a numeric dataset, replacing any object at `path`.
    ///
    /// - Parameters:
    ///   - values: row-major values; `values.count` must equal the product of `shape`.
    ///   - shape: the extents; `[]` writes a scalar.
    ///   - chunks: chunk extents (one per dimension, clamped to the shape); required for `deflate`.
    ///   - deflate: gzip level 0...9; chunks default to the whole array when not given.
    /// - Throws: `ImageFileError.invalidArgument` for a shape mismatch, `.unwritable` from HDF5.
    ///   Rests on `H5Dcreate2` and `H5Dwrite`.
    public func write<T: HDF5Scalar>(
        _ values: [T], shape: [Int], to path: String,
        chunks: [Int]? = nil, deflate: Int? = nil
    ) throws {
        let count = shape.reduce(1, *)
        guard count == values.count, shape.allSatisfy({ $0 >= 0 }) else {
            throw ImageFileError.invalidArgument(
                "\(self.path): \(path): shape \(shape) does not hold \(values.count) values")
        }
        let dataset = try create(path, T.hdf5ElementType, shape: shape, chunks: chunks, deflate: deflate)
        guard count > 0 else { return }
        try hdf5Check(self.path, "writing \(path)", writing: true) {
            values.withUnsafeBytes {
                H5Dwrite(
                    dataset.id, T.hdf5ElementType.nativeType, chdf5_s_all(), chdf5_s_all(), chdf5_p_default(),
                    $0.baseAddress)
            }
        }
    }

    /// Creates a numeric dataset of `shape` (replacing any object at `path`) to be filled box by box with
    /// `write(_:to:start:)`, so a large array never has to be in memory at once; unwritten elements read as 0.
    ///
    /// - Parameters:
    ///   - chunks: chunk extents, clamped to the shape (one frame per chunk suits frame-by-frame writing).
    ///   - deflate: gzip level 0...9, or nil.
    /// - Throws: `.invalidArgument` for negative extents, `.unwritable` from HDF5. Rests on `H5Dcreate2`.
    public func createDataset(
        _ path: String, _ type: HDF5ElementType, shape: [Int], chunks: [Int]? = nil,
        deflate: Int? = nil
    ) throws {
        guard shape.allSatisfy({ $0 >= 0 }) else {
            throw ImageFileError.invalidArgument("\(self.path): \(path): negative extent in \(shape)")
        }
        _ = try create(path, type, shape: shape, chunks: chunks, deflate: deflate)
    }

    /// Writes `values` into the box of the dataset at `path` that starts at `start` and has extents `count`
    /// (row-major values of the box, converted to the dataset's type by HDF5).
    ///
    /// - Throws: `.invalidArgument` when the box does not fit the dataset or `values`, `.unwritable` from HDF5.
    ///   Rests on `H5Sselect_hyperslab` and `H5Dwrite`.
    public func write<T: HDF5Scalar>(_ values: [T], to path: String, start: [Int], count: [Int]) throws {
        let dataset = try openDataset(self, path)
        let (fileSpace, memorySpace, handles) = try box(
            dataset, path, start: start, count: count,
            valueCount: values.count)
        defer { withExtendedLifetime(handles) {} }
        guard !values.isEmpty else { return }
        try hdf5Check(self.path, "writing a box of \(path)", writing: true) {
            values.withUnsafeBytes {
                H5Dwrite(
                    dataset.id, T.hdf5ElementType.nativeType, memorySpace, fileSpace, chdf5_p_default(),
                    $0.baseAddress)
            }
        }
    }

    /// Reads the box of the dataset at `path` that starts at `start` and has extents `count`, converted to `T`.
    ///
    /// - Throws: `.invalidArgument` when the box does not fit the dataset, `.typeMismatch` for a non-numeric
    ///   dataset, `.unreadable` from HDF5. Rests on `H5Sselect_hyperslab` and `H5Dread`.
    public func read<T: HDF5Scalar>(
        _ path: String, as type: T.Type = T.self, start: [Int],
        count: [Int]
    ) throws -> HDF5Array<T> {
        let dataset = try openDataset(self, path)
        try requireNumeric(dataset, path)
        let total = count.reduce(1, *)
        let (fileSpace, memorySpace, handles) = try box(dataset, path, start: start, count: count, valueCount: total)
        defer { withExtendedLifetime(handles) {} }
        if total > 0 { try checkStorage(self, dataset, path) }
        if T.self == Float.self, total > 0, let half = try littleEndianHalfType(dataset, path) {
            // HDF5 1.10 converts half precision with its generic soft conversion, bit by bit; reading the raw
            // 16-bit patterns and widening them here is exact and about fifty times faster.
            var bits = [UInt16](repeating: 0, count: total)
            try hdf5Check(self.path, "reading a box of \(path)") {
                bits.withUnsafeMutableBytes {
                    H5Dread(dataset.id, half.id, memorySpace, fileSpace, chdf5_p_default(), $0.baseAddress)
                }
            }
            let floats = bits.map { halfToFloat[Int($0)] }
            // T is Float here: the same type, so the array is reinterpreted, not cast element by element.
            return HDF5Array(values: unsafeBitCast(floats, to: [T].self), shape: count)
        }
        var values = [T](repeating: 0, count: total)
        if total > 0 {
            try hdf5Check(self.path, "reading a box of \(path)") {
                values.withUnsafeMutableBytes {
                    H5Dread(
                        dataset.id, T.hdf5ElementType.nativeType, memorySpace, fileSpace, chdf5_p_default(),
                        $0.baseAddress)
                }
            }
        }
        return HDF5Array(values: values, shape: count)
    }

    private func create(
        _ path: String, _ type: HDF5ElementType, shape: [Int], chunks: [Int]?,
        deflate: Int?
    ) throws -> HDF5Handle {
        try prepareParent(of: path)
        let space = try simpleSpace(self.path, shape)
        let plist = try hdf5Open(self.path, "property list", close: H5Pclose) {
            H5Pcreate(chdf5_p_dataset_create())
        }
        if !shape.isEmpty, shape.reduce(1, *) > 0, chunks != nil || deflate != nil {
            let chunkDims = zip(chunks ?? shape, shape).map { hsize_t(Swift.max(1, Swift.min($0, $1))) }
            try hdf5Check(self.path, "chunking \(path)", writing: true) {
                H5Pset_chunk(plist.id, Int32(chunkDims.count), chunkDims)
            }
            if let level = deflate {
                try hdf5Check(self.path, "deflate on \(path)", writing: true) {
                    H5Pset_deflate(plist.id, UInt32(Swift.max(0, Swift.min(9, level))))
                }
            }
        }
        return try hdf5Open(self.path, "creating \(path)", close: H5Dclose) {
            H5Dcreate2(handle.id, path, type.nativeType, space.id, chdf5_p_default(), plist.id, chdf5_p_default())
        }
    }

    /// The file and memory dataspaces of a box of a dataset.
    private func box(
        _ dataset: HDF5Handle, _ path: String, start: [Int], count: [Int],
        valueCount: Int
    ) throws -> (file: hid_t, memory: hid_t, handles: [HDF5Handle]) {
        let fileSpace = try dataspace(self, dataset, path)
        let shape = try extents(self, fileSpace, path)
        if shape.isEmpty, start.isEmpty, count.isEmpty, valueCount == 1 {  // a scalar: the whole of it
            return (chdf5_s_all(), chdf5_s_all(), [])
        }
        guard start.count == shape.count, count.count == shape.count, count.reduce(1, *) == valueCount,
            zip(zip(start, count), shape).allSatisfy({ $0.0 >= 0 && $0.1 >= 0 && $0.0 + $0.1 <= $1 })
        else {
            throw ImageFileError.invalidArgument(
                "\(self.path): \(path): box at \(start) of \(count) (\(valueCount) "
                    + "values) does not fit shape \(shape)")
        }
        if valueCount == 0 { return (chdf5_s_all(), chdf5_s_all(), []) }  // nothing is transferred
        try hdf5Check(self.path, "selecting a box of \(path)") {
            H5Sselect_hyperslab(
                fileSpace.id, H5S_SELECT_SET, start.map { hsize_t($0) }, nil,
                count.map { hsize_t($0) }, nil)
        }
        let memorySpace = try simpleSpace(self.path, count)
        return (fileSpace.id, memorySpace.id, [fileSpace, memorySpace])
    }

    /// The dataset's type when it is IEEE 754 half precision stored little endian (as NumPy's and h5py's
    /// `float16`), else nil. Rests on `H5Tget_fields` and `H5Tget_ebias`.
    private func littleEndianHalfType(_ dataset: HDF5Handle, _ path: String) throws -> HDF5Handle? {
        let type = try datasetType(self, dataset, path)
        guard H5Tget_class(type.id) == H5T_FLOAT, H5Tget_size(type.id) == 2, H5Tget_order(type.id) == H5T_ORDER_LE,
            H5Tget_ebias(type.id) == 15
        else { return nil }
        var (sign, exponentPosition, exponentSize, mantissaPosition, mantissaSize) = (0, 0, 0, 0, 0)
        guard H5Tget_fields(type.id, &sign, &exponentPosition, &exponentSize, &mantissaPosition, &mantissaSize) >= 0,
            (sign, exponentPosition, exponentSize, mantissaPosition, mantissaSize) == (15, 10, 5, 0, 10)
        else {
            return nil
        }
        return type
    }

    private func requireNumeric(_ dataset: HDF5Handle, _ path: String) throws {
        let fileType = try datasetType(self, dataset, path)
        let typeClass = H5Tget_class(fileType.id)
        guard typeClass == H5T_INTEGER || typeClass == H5T_FLOAT else {
            throw ImageFileError.typeMismatch(file: self.path, object: path, reason: "not a numeric dataset")
        }
    }

    /// The extents of the dataset at `path`.
    public func shape(of path: String) throws -> [Int] {
        let dataset = try openDataset(self, path)
        return try extents(self, dataspace(self, dataset, path), path)
    }

    /// The element type of the dataset at `path` as SliceLab names it, or nil for strings and other types.
    public func elementType(of path: String) throws -> HDF5ElementType? {
        let dataset = try openDataset(self, path)
        let type = try datasetType(self, dataset, path)
        let size = H5Tget_size(type.id)
        switch H5Tget_class(type.id) {
        case H5T_INTEGER:
            let signed = H5Tget_sign(type.id) == H5T_SGN_2
            switch (size, signed) {
            case (1, false): return .uint8
            case (2, false): return .uint16
            case (1...4, _): return .int32
            default: return .int64
            }
        case H5T_FLOAT: return size <= 4 ? .float32 : .float64
        default: return nil
        }
    }

    /// Reads a numeric dataset, converting its elements to `T`.
    ///
    /// - Parameters:
    ///   - path: the dataset.
    ///   - limits: bounds the element count × the size of `T`, checked from the dataspace before allocating.
    /// - Throws: `.missing`, `.typeMismatch` (not numeric), `.tooLarge` naming the limit, `.unreadable`.
    ///   Rests on `H5Dread`.
    public func read<T: HDF5Scalar>(
        _ path: String, as type: T.Type = T.self,
        limits: ReadLimits = .standard
    ) throws -> HDF5Array<T> {
        let shape = try self.shape(of: path)
        try limits.checkFile(shape, bytesPerValue: MemoryLayout<T>.size, file: self.path, what: path)
        return try read(path, as: type, start: shape.map { _ in 0 }, count: shape)
    }

    /// Reads a numeric dataset of at most `maxElements` elements (checked before allocating).
    ///
    /// - Throws: as `read(_:as:limits:)`. Rests on `H5Dread`.
    public func read<T: HDF5Scalar>(_ path: String, as type: T.Type = T.self, maxElements: Int) throws -> HDF5Array<T> {
        let shape = try self.shape(of: path)
        let (count, overflow) = shape.reduce((1, false)) { acc, extent in
            let (product, o) = acc.0.multipliedReportingOverflow(by: extent)
            return (product, acc.1 || o)
        }
        guard !overflow, count <= maxElements else {
            throw ImageFileError.tooLarge(
                file: self.path,
                reason: "\(path) has shape \(shape), over the limit of \(maxElements) elements")
        }
        return try read(path, as: type, start: shape.map { _ in 0 }, count: shape)
    }

    // MARK: - String datasets

    /// Writes strings as a 1-D dataset of variable-length UTF-8 strings (h5py's `string_dtype()`).
    /// Rests on `H5Dwrite`.
    public func writeStrings(_ strings: [String], to path: String) throws {
        try prepareParent(of: path)
        let type = try variableStringType(self.path)
        let space = try simpleSpace(self.path, [strings.count])
        let dataset = try hdf5Open(self.path, "creating \(path)", close: H5Dclose) {
            H5Dcreate2(handle.id, path, type.id, space.id, chdf5_p_default(), chdf5_p_default(), chdf5_p_default())
        }
        guard !strings.isEmpty else { return }
        try writeStringValues(strings, file: self.path, type: type) {
            H5Dwrite(dataset.id, $0, chdf5_s_all(), chdf5_s_all(), chdf5_p_default(), $1)
        }
    }

    /// Reads a dataset of strings (variable- or fixed-length, any rank) in row-major order.
    public func readStrings(_ path: String) throws -> [String] {
        let dataset = try openDataset(self, path)
        let type = try datasetType(self, dataset, path)
        guard H5Tget_class(type.id) == H5T_STRING else {
            throw ImageFileError.typeMismatch(file: self.path, object: path, reason: "not a string dataset")
        }
        let count = try extents(self, dataspace(self, dataset, path), path).reduce(1, *)
        guard count <= 1 << 26 else {
            throw ImageFileError.tooLarge(file: self.path, reason: "\(path) holds \(count) strings")
        }
        return try readStringValues(file: self.path, what: path, type: type, count: count) {
            H5Dread(dataset.id, $0, chdf5_s_all(), chdf5_s_all(), chdf5_p_default(), $1)
        }
    }
}
