import DICOM
import FuzzSupport

/// The DICOM reader: the header (DCMTK's parser, SliceLab's validation, geometry, rescale, LUTs) and the first
/// frames through whichever decoder the transfer syntax selects (native, RLE, JPEG baseline/extended/lossless,
/// JPEG-LS, JPEG 2000), as modality values or RGB.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDICOM(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let path = FuzzInput.write(data, size, name: "input.dcm")
    FuzzInput.expectTypedError(file: path, isTyped: { $0 is DICOMError }) {
        let file = try DICOMFile(path: path)
        _ = file.headerDump()
        _ = (file.pixelSpacing, file.sliceThickness(), file.imagePosition(), file.imageOrientation())
        for frame in 0..<min(file.frameCount, 2) {
            _ = file.rescale(frame: frame)
            if file.isColor {
                _ = try file.rgbFrame(frame)
            } else {
                _ = try file.modalityFrame(frame)
            }
        }
    }
    return 0
}
