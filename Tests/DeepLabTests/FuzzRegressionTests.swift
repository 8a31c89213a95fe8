import DeepLab
import Foundation
import TestSupport
import Testing

/// Inputs that trapped the safetensors reader during the fuzzing campaign (issue #10), kept in Fixtures/fuzz/:
/// each now ends in `DeepLabError.malformedWeights` naming the file.
struct FuzzRegressionTests {
    /// A tensor of shape [2⁶²] F32: the element count fits in Int, its byte count (×4) does not, and the size
    /// check once trapped on the multiplication.
    @Test func shapeWhoseByteCountOverflowsIsMalformed() throws {
        let path = TestSupport.packageRoot
            .appendingPathComponent("Tests/DeepLabTests/Fixtures/fuzz/shape-bytes-overflow.safetensors").path
        do {
            _ = try SafetensorsFile.read(path)
            Issue.record("a tensor of 2^62 Float32 values in an empty body was accepted")
        } catch let error as DeepLabError {
            guard case .malformedWeights(let file, let reason) = error else {
                Issue.record("expected malformedWeights, got \(error)")
                return
            }
            #expect(file == path)
            #expect(reason.contains("needs more than"))
        }
    }
}
