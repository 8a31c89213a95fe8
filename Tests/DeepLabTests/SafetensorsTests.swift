import DeepLab
import Foundation
import TestSupport
import Testing

/// The safetensors reader against a file written by the safetensors library (Datasets/goldens/deeplab_goldens.py)
/// and against broken files.
@Suite struct SafetensorsTests {
    static var small: String {
        TestSupport.packageRoot.appendingPathComponent("Tests/DeepLabTests/Fixtures/small.safetensors").path
    }

    @Test func readsF32F16BF16AndI64TensorsWrittenBySafetensors() throws {
        let file = try SafetensorsFile.read(Self.small)
        #expect(file.tensors["f32"] == FloatTensor(shape: [2, 3], values: [1.5, -2.25, 3.0, 0.0, 1e-3, -7.5]))
        #expect(file.tensors["f16"] == FloatTensor(shape: [4], values: [0.5, -1.25, 65504.0, 6.1035156e-05]))
        // bfloat16 keeps 8 mantissa bits: 1e30 becomes 1.0005e30 exactly as torch rounds it.
        let bf16 = try #require(file.tensors["bf16"])
        #expect(bf16.shape == [2, 2])
        #expect(Array(bf16.values.prefix(3)) == [1.0, -3.0, 0.15625])
        #expect(abs(bf16.values[3] / 1e30 - 1) < 1 / 128)
        #expect(file.tensors["i64"] == FloatTensor(shape: [], values: [7]))
        #expect(file.storedTypes["bf16"] == "BF16")
        #expect(file.metadata["format"] == "pt")
    }

    @Test func truncatedAndMalformedFilesAreClearErrors() throws {
        let folder = try TestSupport.temporaryFolder("safetensors")
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.small))
        func expectFailure(_ bytes: Data, _ fragment: String) throws {
            let path = folder.appendingPathComponent("bad-\(UUID().uuidString).safetensors").path
            try bytes.write(to: URL(fileURLWithPath: path))
            do {
                _ = try SafetensorsFile.read(path)
                Issue.record("no error for \(fragment)")
            } catch let error as DeepLabError {
                #expect("\(error)".contains(path) && "\(error)".contains(fragment), "\(error)")
            }
        }
        try expectFailure(data.prefix(5), "fewer than the 8-byte header length")
        try expectFailure(data.prefix(40), "truncated: header of")
        try expectFailure(data.prefix(data.count - 3), "truncated: tensor")
        var garbage = Data([16, 0, 0, 0, 0, 0, 0, 0])
        garbage.append(contentsOf: Array("{not json at all".utf8))
        try expectFailure(garbage, "not valid JSON")
        var unsupported = Data()
        let header = Array(#"{"x":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}"#.utf8)
        withUnsafeBytes(of: UInt64(header.count).littleEndian) { unsupported.append(contentsOf: $0) }
        unsupported.append(contentsOf: header)
        unsupported.append(contentsOf: [UInt8](repeating: 0, count: 8))
        try expectFailure(unsupported, "unsupported dtype C64")
    }

    @Test func writtenFilesReadBackExactly() throws {
        let folder = try TestSupport.temporaryFolder("safetensors")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("w.safetensors").path
        let a = FloatTensor(shape: [2, 1, 3], values: [1, -2, 3.5, 0, 1e-7, -1e7])
        try SafetensorsFile.write(
            [("a", a), ("bn.num_batches_tracked", FloatTensor(shape: [], values: [42]))], to: path)
        let file = try SafetensorsFile.read(path)
        #expect(file.tensors["a"] == a)
        #expect(file.storedTypes["bn.num_batches_tracked"] == "I64")
        #expect(file.tensors["bn.num_batches_tracked"]?.values == [42])
    }
}
