import Foundation
import ImageFiles
import TestSupport
import Testing

/// Half-precision datasets (the bundled models' parameters) are widened to Float32 exactly as NumPy does,
/// whether they are read through the raw-bits path (little endian) or HDF5's own conversion (big endian).
@Suite struct HalfPrecisionTests {
    @Test func halfPrecisionValuesWidenExactlyAsNumPyDoes() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("half.h5").path
        let output = try TestSupport.runPython(
            """
            import h5py, numpy as np, sys
            bits = np.arange(0, 65536, 7, dtype=np.uint16)
            values = bits.view(np.float16)
            with h5py.File(sys.argv[1], 'w') as f:
                f['le'] = values.reshape(-1, 1)
                f.create_dataset('be', data=values.astype('>f2'))
                f.create_dataset('chunked', data=values, chunks=(100,), compression='gzip')
            wide = values.astype(np.float32)
            print(' '.join(str(int(b)) for b in wide.view(np.uint32)))
            """, arguments: [path])
        let expected = output.split(separator: " ").compactMap {
            UInt32($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        #expect(expected.count == 9363)
        let file = try HDF5File.open(path)
        for name in ["le", "be", "chunked"] {
            let values = try file.read(name, as: Float.self)
            #expect(values.values.count == expected.count)
            // Bit patterns compared, so infinities, subnormals and −0 count; a NaN must stay a NaN (its payload
            // is not kept: the CPU quiets signalling NaNs, and HDF5's conversion makes every NaN its own).
            let mismatches = zip(values.values, expected).filter { value, bits in
                Float(bitPattern: bits).isNaN ? !value.isNaN : value.bitPattern != bits
            }.count
            #expect(mismatches == 0, "\(name): \(mismatches) values differ from NumPy's widening")
        }
        let box = try file.read("le", as: Float.self, start: [100, 0], count: [5, 1])
        #expect(box.values.map(\.bitPattern) == Array(expected[100..<105]))  // no NaN among them
    }
}
