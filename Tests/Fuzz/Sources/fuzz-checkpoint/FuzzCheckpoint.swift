import DeepLab
import Foundation
import FuzzSupport
import ImageFiles

/// DeepLabV3 checkpoints (HDF5): the configuration and preprocessing attributes, the model they describe and
/// every parameter's name and shape.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCheckpoint(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let path = FuzzInput.write(data, size, name: "checkpoint.h5")
    FuzzInput.expectTypedError(file: path, isTyped: { $0 is DeepLabError || $0 is ImageFileError }) {
        _ = try DeepLabCheckpoint.load(path)
    }
    return 0
}

/// With SLICELAB_FUZZ_WRITE_SEED=PATH set, writes a seed instead of fuzzing: a complete checkpoint of the
/// smallest model (DeepLabV3-MobileNetV2 at width 0.1, 8 ASPP channels, 2 classes, 1 input channel), then exits.
@_cdecl("LLVMFuzzerInitialize")
public func initializeCheckpointFuzzer(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>>>
)
    -> CInt
{
    guard let seed = ProcessInfo.processInfo.environment["SLICELAB_FUZZ_WRITE_SEED"] else { return 0 }
    do {
        let configuration = DeepLabConfiguration(
            architecture: .mobilenetV2, classCount: 2, inputChannels: 1,
            atrousRates: [2, 4, 6], asppChannels: 8, widthMultiplier: 0.1)
        try DeepLabCheckpoint.save(DeepLabV3(configuration), preprocessing: .none, to: seed)
    } catch {
        FuzzInput.fail("cannot write the checkpoint seed \(seed): \(error)")
    }
    exit(0)
}
