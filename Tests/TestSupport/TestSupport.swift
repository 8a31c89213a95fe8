import Foundation

/// Helpers shared by every test target: temporary folders, the package root, the built `slicelab`, and the
/// Python interpreter in `.venv` that runs the peers (h5py, pydicom, …).
public enum TestSupport {
    /// The package's root folder.
    public static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A fresh temporary folder. A test may remove it itself; whatever is left is removed when the test process
    /// exits (`SLICELAB_KEEP_TEST_FOLDERS=1` keeps them for inspection), so runs do not fill the disk: they had left
    /// gigabytes of trained models and data sets in /tmp.
    public static func temporaryFolder(_ label: String = "slicelab-test") throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        madeFolders.add(url)
        return url
    }

    /// The `.venv` Python: `SLICELAB_PYTHON` if set, else `<root>/.venv/bin/python`.
    public static var python: String {
        ProcessInfo.processInfo.environment["SLICELAB_PYTHON"]
            ?? packageRoot.appendingPathComponent(".venv/bin/python").path
    }

    /// The built `slicelab` executable beside the test bundle (`SLICELAB_BINARY` overrides).
    public static var slicelabBinary: String {
        if let path = ProcessInfo.processInfo.environment["SLICELAB_BINARY"] { return path }
        for configuration in ["debug", "release"] {
            let path = packageRoot.appendingPathComponent(".build/\(configuration)/slicelab").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return packageRoot.appendingPathComponent(".build/debug/slicelab").path
    }

    /// The result of running a process.
    public struct ProcessResult {
        public let status: Int32
        public let standardOutput: String
        public let standardError: String
    }

    /// Runs `executable` with `arguments`, capturing both streams (read concurrently, so large outputs
    /// cannot deadlock).
    @discardableResult
    public static func run(
        _ executable: String, _ arguments: [String], input: String? = nil,
        environment: [String: String]? = nil,
        currentDirectory: URL? = nil, timeout: Double? = nil
    ) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        if let timeout {  // a hang is killed, so the test fails on its status instead of never ending
            let pid = process.processIdentifier
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
                if process.isRunning { kill(pid, SIGKILL) }
            }
        }
        final class Box: @unchecked Sendable { var data = Data() }
        let outBox = Box()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            outBox.data = out.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        let outData = outBox.data
        process.waitUntilExit()
        return ProcessResult(
            status: process.terminationStatus,
            standardOutput: String(decoding: outData, as: UTF8.self),
            standardError: String(decoding: errData, as: UTF8.self))
    }

    /// Runs a Python snippet with the `.venv` interpreter; throws with its stderr when it fails.
    @discardableResult
    public static func runPython(_ script: String, arguments: [String] = []) throws -> String {
        let result = try run(python, ["-c", script] + arguments)
        guard result.status == 0 else {
            throw PythonError(message: "python exited \(result.status): \(result.standardError)")
        }
        return result.standardOutput
    }

    /// Runs the built `slicelab` with `arguments`.
    @discardableResult
    public static func slicelab(
        _ arguments: [String], currentDirectory: URL? = nil,
        timeout: Double? = nil
    ) throws -> ProcessResult {
        try run(slicelabBinary, arguments, currentDirectory: currentDirectory, timeout: timeout)
    }

    public struct PythonError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}

/// The folders `TestSupport.temporaryFolder` made in this process, removed at its exit.
private let madeFolders = MadeFolders()

/// @unchecked Sendable: `urls` is read and written under `lock` only.
private final class MadeFolders: @unchecked Sendable {
    private var urls: [URL] = []
    private var registered = false
    private let lock = NSLock()

    func add(_ url: URL) {
        lock.lock()
        defer { lock.unlock() }
        urls.append(url)
        guard !registered, ProcessInfo.processInfo.environment["SLICELAB_KEEP_TEST_FOLDERS"] != "1" else { return }
        registered = true
        atexit { madeFolders.removeAll() }
    }

    func removeAll() {
        lock.lock()
        defer { lock.unlock() }
        for url in urls { try? FileManager.default.removeItem(at: url) }
        urls.removeAll()
    }
}
