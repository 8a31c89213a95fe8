import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ImageFiles

@Suite struct HDF5FileTests {
    @Test func whatSwiftWritesH5pyReads() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("swift.h5").path
        try HDF5File.write(to: path) { file in
            try file.write([UInt8](0..<24), shape: [2, 3, 4], to: "/a/u8")
            try file.write([UInt16(65535), 0, 1234], shape: [3], to: "/a/u16")
            try file.write([Int32(-5), 7], shape: [2], to: "/b/i32")
            try file.write([Int64.min, Int64.max], shape: [2], to: "/b/i64")
            try file.write((0..<600).map { Float($0) * 0.5 }, shape: [20, 30], to: "/c/f32", chunks: [8, 8], deflate: 4)
            try file.write([Double.pi, -.infinity, .nan], shape: [3], to: "/c/f64")
            try file.write([Double(2.5)], shape: [], to: "/c/scalar")
            try file.writeStrings(["case001", "cäse-ü", ""], to: "/runs/r1/case_ids")
            try file.setAttribute("method", .string("kmeans"), at: "/runs/r1")
            try file.setAttribute("seed", .int(42), at: "/runs/r1")
            try file.setAttribute("spacing", .doubles([0.8, 0.8, 2.5]), at: "/c/f32")
            try file.setAttribute("shape", .ints([1, 2, 3]), at: "/c/f32")
            try file.setAttribute("names", .strings(["gray matter", "white matter"]))
            try file.setAttribute("tolerance", .double(1.5))
        }
        let script = """
            import h5py, numpy as np, sys, json
            f = h5py.File(sys.argv[1], 'r')
            out = {
              'u8': f"{f['a/u8'].dtype.str} {f['a/u8'].shape} {f['a/u8'][1, 2, 3]}",
              'u16': f['a/u16'][:].tolist(), 'i32': f['b/i32'][:].tolist(), 'i64': [str(v) for v in f['b/i64'][:]],
              'f32': f"{f['c/f32'].dtype.str} {f['c/f32'].compression} {f['c/f32'].chunks} {f['c/f32'][19, 29]}",
              'f64': [repr(v) for v in f['c/f64'][:]], 'scalar': float(f['c/scalar'][()]),
              'ids': [s.decode() for s in f['runs/r1/case_ids'][:]],
              'method': f['runs/r1'].attrs['method'], 'seed': int(f['runs/r1'].attrs['seed']),
              'spacing': f['c/f32'].attrs['spacing'].tolist(), 'shape': f['c/f32'].attrs['shape'].tolist(),
              'names': list(f.attrs['names']), 'tolerance': float(f.attrs['tolerance']),
            }
            print(json.dumps(out, ensure_ascii=False))
            """
        let output = try TestSupport.runPython(script, arguments: [path])
        let json = try #require(JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        #expect(json["u8"] as? String == "|u1 (2, 3, 4) 23")
        #expect(json["u16"] as? [Int] == [65535, 0, 1234])
        #expect(json["i32"] as? [Int] == [-5, 7])
        #expect(json["i64"] as? [String] == ["\(Int64.min)", "\(Int64.max)"])
        #expect(json["f32"] as? String == "<f4 gzip (8, 8) 299.5")
        #expect(json["f64"] as? [String] == ["3.141592653589793", "-inf", "nan"])
        #expect(json["scalar"] as? Double == 2.5)
        #expect(json["ids"] as? [String] == ["case001", "cäse-ü", ""])
        #expect(json["method"] as? String == "kmeans")
        #expect(json["seed"] as? Int == 42)
        #expect(json["spacing"] as? [Double] == [0.8, 0.8, 2.5])
        #expect(json["shape"] as? [Int] == [1, 2, 3])
        #expect(json["names"] as? [String] == ["gray matter", "white matter"])
        #expect(json["tolerance"] as? Double == 1.5)
    }

    @Test func whatH5pyWritesSwiftReads() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("py.h5").path
        let script = """
            import h5py, numpy as np, sys
            with h5py.File(sys.argv[1], 'w') as f:
                f['image'] = np.arange(2 * 3 * 5, dtype=np.int16).reshape(2, 3, 5) - 7
                f.create_dataset('labels', data=np.arange(12, dtype=np.uint16).reshape(3, 4), chunks=(2, 2), compression='gzip')
                f['g/f64'] = np.array([[0.25, -1e300]])
                f['g/vlen'] = np.array(['alpha', 'βeta'], dtype=h5py.string_dtype())
                f['g/fixed'] = np.array([b'ab', b'cde'])
                f['image'].attrs['spacing'] = np.array([2.5, 0.7, 0.7])
                f['image'].attrs['modality'] = 'MR'
                f['image'].attrs['slope'] = np.float32(0.5)
                f['image'].attrs['frames'] = np.int64(2)
                f['image'].attrs['fixed'] = np.bytes_(b'CT')
                f.attrs['list'] = ['x', 'yz']
            """
        try TestSupport.runPython(script, arguments: [path])
        let file = try HDF5File.open(path)
        let image = try file.read("/image", as: Float.self)
        #expect(image.shape == [2, 3, 5])
        #expect(image.values.first == -7 && image.values.last == 22)
        #expect(try file.elementType(of: "/image") == .int32)
        let labels = try file.read("labels", as: UInt16.self)
        #expect(labels.shape == [3, 4] && labels.values == (0..<12).map(UInt16.init))
        #expect(try file.elementType(of: "labels") == .uint16)
        #expect(try file.read("/g/f64", as: Double.self).values == [0.25, -1e300])
        #expect(try file.readStrings("/g/vlen") == ["alpha", "βeta"])
        #expect(try file.readStrings("/g/fixed") == ["ab", "cde"])
        #expect(try file.attribute("spacing", at: "/image") == .doubles([2.5, 0.7, 0.7]))
        #expect(try file.attribute("modality", at: "/image") == .string("MR"))
        #expect(try file.attribute("slope", at: "/image") == .double(0.5))
        #expect(try file.attribute("frames", at: "/image") == .int(2))
        #expect(try file.attribute("fixed", at: "/image") == .string("CT"))
        #expect(try file.attribute("list") == .strings(["x", "yz"]))
        #expect(try file.attributeNames(at: "/image") == ["fixed", "frames", "modality", "slope", "spacing"])
        #expect(try file.children() == ["g", "image", "labels"])
        #expect(try file.kind(of: "/g") == .group)
        #expect(try file.kind(of: "/g/f64") == .dataset)
    }

    @Test func addingAGroupKeepsEverythingElse() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("runs.h5").path
        try HDF5File.write(to: path) { file in
            try file.write([1.0, 2.0], shape: [2], to: "/runs/a/metrics/dice")
            try file.setAttribute("method", .string("deeplab"), at: "/runs/a")
        }
        try HDF5File.write(to: path) { file in
            try file.write([3.0], shape: [1], to: "/runs/b/metrics/dice")
        }
        let file = try HDF5File.open(path)
        #expect(try file.children(of: "/runs") == ["a", "b"])
        #expect(try file.read("/runs/a/metrics/dice", as: Double.self).values == [1, 2])
        #expect(try file.attribute("method", at: "/runs/a") == .string("deeplab"))
        #expect(try file.read("/runs/b/metrics/dice", as: Double.self).values == [3])
    }

    @Test func aHardLinkIsTheSameDatasetUnderASecondName() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("linked.h5").path
        try HDF5File.write(to: path) { file in
            try file.write([Float(1), 2, 3, 4], shape: [2, 2], to: "/series/1.2.3/image")
            try file.link("/image", to: "/series/1.2.3/image")
            try file.setAttribute("modality", .string("CT"), at: "/image")
            #expect(throws: ImageFileError.self) { try file.link("/other", to: "/missing") }
        }
        let file = try HDF5File.open(path)
        #expect(try file.read("/image", as: Float.self).values == [1, 2, 3, 4])
        #expect(try file.attribute("modality", at: "/series/1.2.3/image") == .string("CT"))
        // h5py sees two names of one object.
        let output = try TestSupport.runPython(
            """
            import h5py, sys
            f = h5py.File(sys.argv[1], "r")
            print(f["image"].id == f["series/1.2.3/image"].id, f["image"][...].tolist())
            """, arguments: [path])
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "True [[1.0, 2.0], [3.0, 4.0]]")
    }

    @Test func anErrorInsideAWriteLeavesThePreviousFile() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("r.h5").path
        try HDF5File.write(to: path) { try $0.write([Int32(1)], shape: [1], to: "/keep") }
        struct Injected: Error {}
        #expect(throws: Injected.self) {
            try HDF5File.write(to: path) { file in
                try file.remove("/keep")
                try file.write([Int32(2)], shape: [1], to: "/new")
                throw Injected()
            }
        }
        let file = try HDF5File.open(path)
        #expect(try file.children() == ["keep"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["r.h5"])
    }

    @Test func badFilesAndPathsAreClearErrors() throws {
        let folder = try TestSupport.temporaryFolder()
        let text = folder.appendingPathComponent("text.h5").path
        try Data("not hdf5 at all".utf8).write(to: URL(fileURLWithPath: text))
        #expect(throws: ImageFileError.unreadable(file: text, reason: "not an HDF5 file")) { try HDF5File.open(text) }
        let missing = folder.appendingPathComponent("none.h5").path
        #expect(throws: ImageFileError.unreadable(file: missing, reason: "no such readable file")) {
            try HDF5File.open(missing)
        }
        #expect(throws: ImageFileError.self) {
            try HDF5File.write(to: text) { try $0.write([UInt8(1)], shape: [1], to: "/x") }
        }
        let path = folder.appendingPathComponent("ok.h5").path
        try HDF5File.write(to: path) { file in
            try file.write([UInt8](repeating: 0, count: 6), shape: [2, 3], to: "/image")
            try file.writeStrings(["a"], to: "/names")
            #expect(throws: ImageFileError.invalidArgument("\(path): /bad: shape [4] does not hold 3 values")) {
                try file.write([Float](repeating: 0, count: 3), shape: [4], to: "/bad")
            }
        }
        let file = try HDF5File.open(path)
        #expect(throws: ImageFileError.missing(file: path, object: "/labels")) {
            try file.read("/labels", as: UInt8.self)
        }
        #expect(throws: ImageFileError.missing(file: path, object: "/a/b/c")) { try file.shape(of: "/a/b/c") }
        #expect(throws: ImageFileError.typeMismatch(file: path, object: "/names", reason: "not a numeric dataset")) {
            try file.read("/names", as: Float.self)
        }
        do {
            _ = try file.read("/image", as: Float.self, maxElements: 5)
            Issue.record("a dataset over the element limit was read")
        } catch let ImageFileError.tooLarge(file, reason) {
            #expect(file == path)
            #expect(reason.contains("limit of 5"))
        }
        let truncated = folder.appendingPathComponent("cut.h5").path
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: truncated))
        #expect(throws: ImageFileError.self) { try HDF5File.open(truncated).read("/image", as: UInt8.self) }
    }
}

@Suite struct HDF5CrashIsolationTests {
    /// A 1.9 KB file found by `make fuzz` on which Debian 12's libhdf5 1.10.8 segfaults inside `H5Lexists`
    /// (`H5G__stab_lookup` → `H5HL_protect` → `H5F__accum_read`, a memcpy from NULL). Opening it must be an
    /// error naming the file, not the end of the process.
    @Test func aFileThatCrashesTheLibraryIsATypedError() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/hdf5-1.10.8-accum-read-null.h5").path
        do {
            let file = try HDF5File.open(path)
            _ = file.exists("/image")
            Issue.record("the crashing file opened without an error")
        } catch let ImageFileError.unreadable(file, reason) {
            #expect(file == path)
            #expect(reason.contains("the HDF5 library crashed reading it"))
            #expect(reason.contains("Segmentation fault"))
        }
    }

    /// The child-process walk reads what the parent reads; a sound file opens as before, with every value.
    @Test func soundFilesOpenThroughTheProbe() throws {
        let path = try TestSupport.temporaryFolder().appendingPathComponent("ok.h5").path
        try HDF5File.write(to: path) { file in
            try file.write((0..<12).map { Float($0) }, shape: [3, 4], to: "/g/image", chunks: [2, 2], deflate: 1)
            try file.setAttribute("names", .strings(["a", "b"]), at: "/g/image")
        }
        let file = try HDF5File.open(path)
        #expect(try file.read("/g/image", as: Float.self).values == (0..<12).map { Float($0) })
    }
}

@Suite struct HDF5ProbeConcurrencyTests {
    /// Opening files on two threads at once forks while the other thread may be inside HDF5 (its lock copied
    /// held into the child); such a child is recognised and the fork retried, so every open is still probed.
    @Test func concurrentOpensAreAllProbed() throws {
        let folder = try TestSupport.temporaryFolder("hdf5-probe-concurrency")
        defer { try? FileManager.default.removeItem(at: folder) }
        let paths = try (0..<2).map { index -> String in
            let path = folder.appendingPathComponent("f\(index).h5").path
            try HDF5File.write(to: path) { file in
                try file.write(
                    (0..<65_536).map { Float($0) }, shape: [256, 256], to: "/image", chunks: [32, 32],
                    deflate: 4)
            }
            return path
        }
        let before = HDF5ProbeStatistics.shared.snapshot
        let errors = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            for _ in 0..<40 {
                do {
                    let values = try HDF5File.open(paths[index]).read("/image", as: Float.self).values
                    if values.count != 65_536 || values[65_535] != 65_535 {
                        throw ImageFileError.invalidArgument("bad")
                    }
                } catch {
                    errors.withLock { $0.append("\(error)") }
                }
            }
        }
        let after = HDF5ProbeStatistics.shared.snapshot
        let failures = errors.withLock { $0 }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(after.probes - before.probes >= 80)
        #expect(after.fallbacks == before.fallbacks, "retries \(after.retries - before.retries)")
    }
}
