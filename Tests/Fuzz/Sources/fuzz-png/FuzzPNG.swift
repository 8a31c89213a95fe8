import FuzzSupport

/// PNG reading: libpng through ImageFiles, then the image loader and the label loader built on it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPNG(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzInput.readAsImageAndLabels(FuzzInput.write(data, size, name: "input.png"))
    return 0
}
