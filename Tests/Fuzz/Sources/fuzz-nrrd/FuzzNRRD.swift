import FuzzSupport
import ImageFiles
import SliceLabIO
import SliceLabSupport

/// The NRRD reader (header, encodings, geometry) and 3D Slicer's segment table, as images and as labels.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNRRD(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let path = FuzzInput.write(data, size, name: "input.seg.nrrd")
    let limits = ReadLimits(maxBytes: 64 << 20)
    let typed: (Error) -> Bool = { $0 is ImageFileError || $0 is InputError }
    FuzzInput.expectTypedError(file: path, isTyped: typed) { _ = try NRRDFormat().readImage(path, limits: limits) }
    FuzzInput.expectTypedError(file: path, isTyped: typed) { _ = try NRRDFormat().readLabels(path, limits: limits) }
    return 0
}
