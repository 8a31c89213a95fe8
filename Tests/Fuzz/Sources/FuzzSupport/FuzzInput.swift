import Foundation

/// What every SliceLab fuzz target does with libFuzzer's bytes: hands them to a reader as a file (the readers
/// take paths, as the product does) and holds the reader to its contract — it returns, or it throws one of its
/// typed errors naming the file. Anything else (a trap, an ASan report, a leak, an untyped error, an error that
/// does not name the file) stops the fuzzer, which saves the input as a crash.
public enum FuzzInput {
    /// This process's scratch folder (one per process, so parallel runs never share an input file).
    public static let folder: String = {
        let path = NSTemporaryDirectory() + "slicelab-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    /// Writes the input to `folder/name` (the extension picks the reader where the product dispatches on it)
    /// and returns the path. Rests on `fwrite`.
    public static func write(_ data: UnsafePointer<UInt8>?, _ size: Int, name: String) -> String {
        let path = folder + "/" + name
        if name.contains("/") {
            let parent = (path as NSString).deletingLastPathComponent
            try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        }
        guard let file = fopen(path, "wb") else { fail("cannot create the scratch file \(path)") }
        if let data, size > 0, fwrite(data, 1, size, file) != size { fail("cannot write the scratch file \(path)") }
        fclose(file)
        return path
    }

    /// Runs a reader on `file`: returning is fine, throwing is fine when `isTyped` accepts the error and its
    /// description names `file`; anything else aborts.
    public static func expectTypedError(file: String, isTyped: (Error) -> Bool, _ body: () throws -> Void) {
        do {
            try body()
        } catch {
            guard isTyped(error) else { fail("untyped error \(type(of: error)): \(error)") }
            guard "\(error)".contains(file) else { fail("error does not name the file \(file): \(error)") }
        }
    }

    /// Stops the fuzzer on a broken contract (libFuzzer saves the input that caused it).
    public static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("slicelab fuzz: contract broken: \(message)\n".utf8))
        abort()
    }
}
