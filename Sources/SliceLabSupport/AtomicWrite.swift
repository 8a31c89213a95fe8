import Foundation

/// Writes a file atomically: the content goes to a temporary file beside the destination, is flushed to disk,
/// and is renamed over the destination only when complete. A crash or an error at any point leaves either
/// the previous version of the file or none, never a half-written one. Temporaries that killed processes left
/// beside the destination are removed first.
///
/// - Parameters:
///   - path: the destination.
///   - body: writes the complete content to the temporary path it is given.
/// - Throws: `FileWriteError.unwritable` naming `path`, or whatever `body` throws; the temporary file is removed.
///   Rests on `rename(2)`.
public func writeAtomically(to path: String, _ body: (_ temporaryPath: String) throws -> Void) throws {
    let (directory, name) = try destinationFolder(of: path)
    removeStaleTemporaries(of: name, in: directory)
    let temporary = directory + "/" + temporaryName(for: name, kind: "tmp")
    do {
        try body(temporary)
        try syncFile(temporary, destination: path)
        guard rename(temporary, path) == 0 else {
            throw FileWriteError.unwritable(file: path, reason: String(cString: strerror(errno)))
        }
        syncFolder(directory)
    } catch {
        unlink(temporary)
        throw error
    }
}

/// Writes `data` to `path` atomically. Rests on `writeAtomically(to:_:)`.
public func writeAtomically(_ data: Data, to path: String) throws {
    try writeAtomically(to: path) { temporary in
        guard FileManager.default.createFile(atPath: temporary, contents: data) else {
            throw FileWriteError.unwritable(
                file: path,
                reason: "cannot create \(temporary): "
                    + String(cString: strerror(errno)))
        }
    }
}

/// Writes a folder that SliceLab owns entirely (overlays, say) atomically: `body` fills a fresh temporary
/// folder beside `path`, every file in it is flushed, and it then takes the place of `path` in one step
/// (`renameat2` with `RENAME_EXCHANGE` when a previous folder exists, which is then removed). A kill leaves the
/// previous folder or the new one, never a mixture; anything already in `path` is replaced.
///
/// - Throws: `FileWriteError.unwritable` naming `path`, or whatever `body` throws; the temporary folder is removed.
///   Rests on `rename(2)` and `renameat2(2)`.
public func writeFolderAtomically(to path: String, _ body: (_ temporaryFolder: String) throws -> Void) throws {
    let (directory, name) = try destinationFolder(of: path)
    removeStaleTemporaries(of: name, in: directory)
    let temporary = directory + "/" + temporaryName(for: name, kind: "tmp")
    do {
        guard mkdir(temporary, 0o755) == 0 else {
            throw FileWriteError.unwritable(
                file: path,
                reason: "cannot create \(temporary): "
                    + String(cString: strerror(errno)))
        }
        try body(temporary)
        for file in (try? FileManager.default.subpathsOfDirectory(atPath: temporary)) ?? [] {
            var isDirectory: ObjCBool = false
            let full = temporary + "/" + file
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
                try syncFile(full, destination: path)
            }
        }
        syncFolder(temporary)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw FileWriteError.unwritable(file: path, reason: "a file, not a folder, is in the way")
            }
            try exchange(temporary, path)
            // `temporary` now holds the previous folder.
            try? FileManager.default.removeItem(atPath: temporary)
        } else if rename(temporary, path) != 0 {
            throw FileWriteError.unwritable(file: path, reason: String(cString: strerror(errno)))
        }
        syncFolder(directory)
    } catch {
        try? FileManager.default.removeItem(atPath: temporary)
        throw error
    }
}

// MARK: - Pieces

private func destinationFolder(of path: String) throws -> (directory: String, name: String) {
    let url = URL(fileURLWithPath: path)
    let directory = url.deletingLastPathComponent().path
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    } catch {
        throw FileWriteError.unwritable(
            file: path,
            reason: "cannot create folder \(directory): "
                + ((error as NSError).userInfo[NSUnderlyingErrorKey].map { "\($0)" } ?? error.localizedDescription))
    }
    return (directory, url.lastPathComponent)
}

/// ".NAME.KIND-PID-RANDOM": hidden (folder readers skip dot files), and naming the process that owns it.
private func temporaryName(for name: String, kind: String) -> String {
    ".\(name).\(kind)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
}

/// Removes `.NAME.tmp-PID-*` and `.NAME.old-PID-*` beside the destination whose process no longer exists (a
/// killed writer's leftovers); those of live processes are left alone. Rests on `kill(pid, 0)`.
private func removeStaleTemporaries(of name: String, in directory: String) {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
    for entry in entries {
        for kind in ["tmp", "old"] {
            let prefix = ".\(name).\(kind)-"
            guard entry.hasPrefix(prefix), let pid = Int32(entry.dropFirst(prefix.count).prefix { $0 != "-" }),
                pid > 0, kill(pid, 0) == -1, errno == ESRCH
            else { continue }
            try? FileManager.default.removeItem(atPath: directory + "/" + entry)
        }
    }
}

/// Swaps two folders in one step with `renameat2(RENAME_EXCHANGE)`; where the kernel or file system cannot,
/// moves `destination` aside, renames `source` into place and leaves the old folder at `source`.
private func exchange(_ source: String, _ destination: String) throws {
    typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
    let renameExchange: UInt32 = 2  // RENAME_EXCHANGE, linux/fs.h
    if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") {
        let renameat2 = unsafeBitCast(symbol, to: RenameAt2.self)
        if renameat2(AT_FDCWD, source, AT_FDCWD, destination, renameExchange) == 0 { return }
        guard errno == EINVAL || errno == ENOSYS else {
            throw FileWriteError.unwritable(file: destination, reason: String(cString: strerror(errno)))
        }
    }
    let url = URL(fileURLWithPath: destination)
    let aside = url.deletingLastPathComponent().path + "/" + temporaryName(for: url.lastPathComponent, kind: "old")
    guard rename(destination, aside) == 0 else {
        throw FileWriteError.unwritable(file: destination, reason: String(cString: strerror(errno)))
    }
    guard rename(source, destination) == 0 else {
        let reason = String(cString: strerror(errno))
        _ = rename(aside, destination)
        throw FileWriteError.unwritable(file: destination, reason: reason)
    }
    guard rename(aside, source) == 0 else {
        try? FileManager.default.removeItem(atPath: aside)
        return
    }
}

private func syncFile(_ temporary: String, destination: String) throws {
    let fd = open(temporary, O_RDONLY)
    guard fd >= 0 else {
        throw FileWriteError.unwritable(
            file: destination,
            reason: "temporary file vanished: "
                + String(cString: strerror(errno)))
    }
    defer { close(fd) }
    guard fsync(fd) == 0 else {
        throw FileWriteError.unwritable(file: destination, reason: String(cString: strerror(errno)))
    }
}

/// Flushes a folder's entries (a rename is durable once its folder is). Errors are ignored: some file
/// systems cannot sync folders, and the rename itself already happened.
private func syncFolder(_ folder: String) {
    let fd = open(folder, O_RDONLY | O_DIRECTORY)
    guard fd >= 0 else { return }
    _ = fsync(fd)
    close(fd)
}

/// Makes sure an output can be written before any long work starts, so a run fails in its first second rather
/// than after hours of compute: the nearest existing folder on the way to the output must be a folder that
/// accepts new entries. Nothing is created here (a run that then fails on its inputs leaves no trace); the
/// writers create the missing folders when they write. A killed earlier writer's temporaries beside the output
/// are removed now, not only if this run writes the same output again.
///
/// - Parameter path: the output file (or, with `isFolder`, the output folder itself).
/// - Throws: `FileWriteError.unwritable` naming `path` and the cause. Rests on `access(2)`.
public func prepareOutputLocation(_ path: String, isFolder: Bool = false) throws {
    let url = URL(fileURLWithPath: path)
    var folder = isFolder ? url : url.deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: folder.path), folder.path != "/" {
        folder = folder.deletingLastPathComponent()
    }
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
        throw FileWriteError.unwritable(file: path, reason: "\(folder.path) is not a folder")
    }
    guard access(folder.path, W_OK | X_OK) == 0 else {
        throw FileWriteError.unwritable(
            file: path,
            reason: "folder \(folder.path) is not writable: "
                + String(cString: strerror(errno)))
    }
    removeStaleTemporaries(of: url.lastPathComponent, in: url.deletingLastPathComponent().path)
}

/// A write that failed; any earlier version of the file is intact.
public enum FileWriteError: Error, CustomStringConvertible, Equatable {
    case unwritable(file: String, reason: String)

    public var description: String {
        switch self {
        case .unwritable(let file, let reason): return "\(file): cannot write: \(reason)"
        }
    }
}
