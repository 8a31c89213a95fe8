import DeepLab
import FuzzSupport

/// safetensors parsing: the header length, the JSON header, dtypes, shapes, offsets and the conversion of
/// every tensor to Float32.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSafetensors(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let path = FuzzInput.write(data, size, name: "weights.safetensors")
    FuzzInput.expectTypedError(file: path, isTyped: { $0 is DeepLabError }) {
        _ = try SafetensorsFile.read(path)
    }
    return 0
}
