import DICOM
import FuzzSupport

/// The RT Structure Set reader (dcmrt's IOD) and the rasteriser, every ROI on a small grid.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRTStruct(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let path = FuzzInput.write(data, size, name: "input-rtstruct.dcm")
    FuzzInput.expectTypedError(file: path, isTyped: { $0 is DICOMError }) {
        let set = try StructureSet(path: path)
        let grid = ContourGrid(rows: 24, columns: 24, slices: 6, spacing: 2)
        for roi in set.rois { _ = try set.mask(roi, on: grid) }
    }
    return 0
}
