import FuzzSupport
import ImageFiles

/// NIfTI reading: the header checks and nifti_clib through ImageFiles, then the image and label loaders, for
/// the input as a plain `.nii` file (a gzip stream inside is read as `.nii.gz` would be); then the streaming
/// reader `segment` uses, slice by slice, forward and once backward.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNIfTI(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let path = FuzzInput.write(data, size, name: "input.nii")
    FuzzInput.readAsImageAndLabels(path)
    FuzzInput.expectTypedError(file: path, isTyped: { $0 is ImageFileError }) {
        let stream = try NIfTIVoxelStream(path)
        let count = stream.header.dimensions.reduce(1, *)
        let run = max(1, stream.header.dimensions.prefix(2).reduce(1, *))
        var first = 0
        while first < count {
            _ = try stream.read(first: first, count: min(run, count - first))
            first += run
        }
        _ = try stream.read(first: 0, count: min(run, count))
    }
    return 0
}
