import FuzzSupport

/// HDF5 reading of `/image` (the image loader of segment, cluster and the labeled sets) and `/labels` (the
/// label loader of evaluate), attributes included.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHDF5(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzInput.readAsImageAndLabels(FuzzInput.write(data, size, name: "input.h5"))
    return 0
}
