import DICOM
import FuzzSupport

/// The DICOM Segmentation reader: segment sequence, functional groups and every frame's mask.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDICOMSEG(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let path = FuzzInput.write(data, size, name: "input-seg.dcm")
    FuzzInput.expectTypedError(file: path, isTyped: { $0 is DICOMError }) {
        _ = try Segmentation(path: path)
    }
    return 0
}
