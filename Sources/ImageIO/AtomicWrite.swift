import Foundation

/// Writes a file atomically: the content goes to a temporary file beside the destination, is flushed to disk,
/// and is renamed over the destination only when complete. A crash or an error at any point leaves either
/// the previous version of the file or none, never a half-written one.
///
/// - Parameters:
///   - path: the destination.
///   - body: writes the complete content to the temporary path it is given.
/// - Throws: `ImageIOError.unwritable` naming `path`, or whatever `body` throws; the temporary file is removed.
///   Rests on `rename(2)`.
public func writeAtomically(to path: String, _ body: (_ temporaryPath: String) throws -> Void) throws {
    let url = URL(fileURLWithPath: path)
    let directory = url.deletingLastPathComponent().path
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
        throw ImageIOError.unwritable(file: path, reason: "folder \(directory) does not exist")
    }
    let temporary = directory + "/." + url.lastPathComponent + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    do {
        try body(temporary)
        try syncFile(temporary, destination: path)
        guard rename(temporary, path) == 0 else {
            throw ImageIOError.unwritable(file: path, reason: String(cString: strerror(errno)))
        }
    } catch {
        unlink(temporary)
        throw error
    }
}

/// Writes `data` to `path` atomically. Rests on `writeAtomically(to:_:)`.
public func writeAtomically(_ data: Data, to path: String) throws {
    try writeAtomically(to: path) { temporary in
        guard FileManager.default.createFile(atPath: temporary, contents: data) else {
            throw ImageIOError.unwritable(file: path, reason: "cannot create \(temporary): "
                + String(cString: strerror(errno)))
        }
    }
}

private func syncFile(_ temporary: String, destination: String) throws {
    let fd = open(temporary, O_RDONLY)
    guard fd >= 0 else {
        throw ImageIOError.unwritable(file: destination, reason: "temporary file vanished: "
            + String(cString: strerror(errno)))
    }
    defer { close(fd) }
    guard fsync(fd) == 0 else {
        throw ImageIOError.unwritable(file: destination, reason: String(cString: strerror(errno)))
    }
}

/// Makes sure an output can be written before any long work starts: creates the destination's folder (with its
/// parents) when missing and checks that it accepts new files, so a run fails in its first second rather than
/// after hours of compute.
///
/// - Parameter path: the output file (or, with `isFolder`, the output folder itself).
/// - Throws: `ImageIOError.unwritable` naming `path` and the cause. Rests on `mkdir(2)` and `access(2)`.
public func prepareOutputLocation(_ path: String, isFolder: Bool = false) throws {
    let url = URL(fileURLWithPath: path)
    let directory = isFolder ? url.path : url.deletingLastPathComponent().path
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    } catch {
        throw ImageIOError.unwritable(file: path, reason: "cannot create folder \(directory): "
            + ((error as NSError).userInfo[NSUnderlyingErrorKey].map { "\($0)" } ?? error.localizedDescription))
    }
    guard access(directory, W_OK | X_OK) == 0 else {
        throw ImageIOError.unwritable(file: path, reason: "folder \(directory) is not writable: "
            + String(cString: strerror(errno)))
    }
}
