import FuzzSupport

/// NIfTI reading: the header checks and nifti_clib through ImageFiles, then the image and label loaders, for
/// the input as a plain `.nii` file (a gzip stream inside is read as `.nii.gz` would be).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNIfTI(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzInput.readAsImageAndLabels(FuzzInput.write(data, size, name: "input.nii"))
    return 0
}
