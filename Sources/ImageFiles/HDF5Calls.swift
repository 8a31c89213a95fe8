import CHDF5
import Foundation
import SliceLabSupport

// Raw HDF5 C calls, each wrapped so that a negative status becomes a thrown `ImageFileError` carrying the
// library's own message. Nothing else in the package calls HDF5 directly.

/// An HDF5 identifier closed by `deinit` with the matching close function, or earlier by `close()` when the
/// caller needs the status (closing a file being written is its last write).
final class HDF5Handle {
    let id: hid_t
    private let closeFunction: (hid_t) -> herr_t
    private var isOpen = true

    init(_ id: hid_t, close: @escaping (hid_t) -> herr_t) {
        self.id = id
        self.closeFunction = close
    }

    /// Closes now and returns the library's status; later calls (and `deinit`) do nothing.
    func close() -> herr_t {
        guard isOpen else { return 0 }
        isOpen = false
        return closeFunction(id)
    }

    deinit { _ = close() }
}

/// Initialises the library once, without its exit handler: after a write fails (a full disk, say), HDF5 1.10
/// keeps the failed file half-closed and its exit handler crashes flushing it again. Every file SliceLab writes
/// is closed (and checked) before it is renamed into place, so nothing is lost at exit. Rests on
/// `H5dont_atexit`.
let hdf5Initialised: Void = {
    _ = H5dont_atexit()
    _ = H5open()
}()

/// Prepares the calling thread for HDF5 calls: the thread-safe library keeps its error-printing setting per
/// thread, so each thread silences it (SliceLab reports HDF5's messages itself).
func hdf5PrepareThread() {
    _ = hdf5Initialised
    chdf5_silence_errors()
}

/// The messages on HDF5's error stack, most specific last; clears the stack.
@discardableResult
func hdf5Message() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    chdf5_last_error(&buffer)
    return summarizedHDF5Stack(String(nulTerminated: buffer))
}

/// HDF5's error stack ("can't write data; …; file write failed: time = …, errno = 28, error message = 'No space
/// left on device', …") shortened for people: the outermost description and, when the stack carries one, the
/// operating system's message ("can't write data: No space left on device").
func summarizedHDF5Stack(_ text: String) -> String {
    let parts = text.replacingOccurrences(of: "\n", with: " ").components(separatedBy: "; ")
        .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    guard let first = parts.first else { return "HDF5 error" }
    if let range = text.range(of: "error message = '"),
        let end = text[range.upperBound...].firstIndex(of: "'")
    {
        return first + ": " + text[range.upperBound..<end]
    }
    return parts.reduce(into: [String]()) { kept, part in if kept.last != part { kept.append(part) } }
        .joined(separator: "; ")
}

/// Walks `path` in a forked child before this process reads it, so that a file on which the HDF5 library itself
/// crashes (Debian 12's 1.10.8 segfaults on some malformed metadata, HDFGroup/hdf5#1311) becomes a typed error
/// instead of taking the process down. The child opens the file, visits every link, attribute and, within
/// `budget` bytes, every dataset's values, then exits.
///
/// A fork taken while another thread of this process was inside an HDF5 call copies HDF5's lock held: that
/// child can never finish. It is recognised by sleeping without using CPU time (`/proc/PID/stat`) and without
/// children of its own for 50 ms,
/// killed, and the fork retried after a growing random pause (the other thread's call is short, but on a busy
/// machine it can take several tries to fork outside one); after ten such tries, after `timeout` seconds, or
/// when `fork` fails, the file is read in-process as if no probe had run.
///
/// - Throws: `ImageFileError.unreadable` naming the signal that killed the child. Rests on `fork`, `waitpid` and
///   `chdf5_probe_file`.
func hdf5ProbeInChildProcess(_ path: String, budget: Int = 64 << 20, timeout: Double = 10) throws {
    hdf5PrepareThread()
    let deadline = Date().addingTimeInterval(timeout)
    let attempts = 10
    for attempt in 1...attempts {
        switch probeOnce(path, budget: budget, deadline: deadline) {
        case .finished:
            HDF5ProbeStatistics.shared.record(retries: attempt - 1, fellBack: false)
            return
        case .crashed(let signal):
            HDF5ProbeStatistics.shared.record(retries: attempt - 1, fellBack: false)
            let name = strsignal(signal).map { String(cString: $0) } ?? "signal \(signal)"
            throw ImageFileError.unreadable(
                file: path,
                reason: "the HDF5 library crashed reading it (\(name), in a "
                    + "child process); the file is malformed")
        case .stuck where attempt < attempts && Date() < deadline:
            usleep(UInt32.random(in: 1000...5000) * UInt32(attempt))
        case .stuck, .unavailable:
            HDF5ProbeStatistics.shared.record(retries: attempt - 1, fellBack: true)
            return
        }
    }
}

private enum ProbeOutcome {
    case finished
    case crashed(Int32)
    case stuck, unavailable
}

/// One forked walk of `path`, waited for until `deadline`.
private func probeOnce(_ path: String, budget: Int, deadline: Date) -> ProbeOutcome {
    let child = path.withCString { cPath -> pid_t in
        let pid = fork()
        if pid == 0 { _exit(chdf5_probe_file(cPath, budget)) }
        return pid
    }
    guard child > 0 else { return .unavailable }
    var status: Int32 = 0
    var pause: UInt32 = 200
    var idleSince: Date?
    var lastTicks = -1
    while true {
        let done = waitpid(child, &status, WNOHANG)
        if done == child { break }
        if done < 0 && errno != EINTR { return .unavailable }
        let (state, ticks) = processState(child)
        if state == "S" && ticks == lastTicks && !hasChildren(child) {
            if let since = idleSince, Date().timeIntervalSince(since) >= 0.05 { return stuck(child) }
            idleSince = idleSince ?? Date()
        } else {
            idleSince = nil
        }
        lastTicks = ticks
        if Date() > deadline { return stuck(child) }
        usleep(pause)
        pause = min(pause * 2, 5000)
    }
    let signal = status & 0x7f
    return signal != 0 && signal != 0x7f ? .crashed(signal) : .finished
}

/// Kills and reaps a child that cannot finish.
private func stuck(_ child: pid_t) -> ProbeOutcome {
    kill(child, SIGKILL)
    var status: Int32 = 0
    _ = waitpid(child, &status, 0)
    return .stuck
}

/// Whether a process has children of its own (`/proc/PID/task/PID/children`): a probe child waiting for one
/// (a sanitizer's symbolizer writing a crash report, in the fuzzing builds) is not stuck on a lock.
private func hasChildren(_ pid: pid_t) -> Bool {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8) else {
        return false
    }
    return !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
}

/// A process's scheduling state ("R", "S", "D", …) and CPU time in clock ticks, from `/proc/PID/stat`.
private func processState(_ pid: pid_t) -> (state: String, ticks: Int) {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = text.lastIndex(of: ")")
    else { return ("?", -1) }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 12 else { return ("?", -1) }
    return (String(fields[0]), (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0))
}

/// Counts of the probes' retries and in-process fallbacks (for tests and diagnosis).
// @unchecked Sendable: the counts are read and written under `lock` only.
final class HDF5ProbeStatistics: @unchecked Sendable {
    static let shared = HDF5ProbeStatistics()
    private let lock = NSLock()
    private(set) var probes = 0, retries = 0, fallbacks = 0

    func record(retries extra: Int, fellBack: Bool) {
        lock.lock()
        defer { lock.unlock() }
        probes += 1
        retries += extra
        if fellBack { fallbacks += 1 }
    }

    var snapshot: (probes: Int, retries: Int, fallbacks: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (probes, retries, fallbacks)
    }
}

/// Runs an HDF5 call returning an identifier; throws with the file and HDF5's message when it is negative.
func hdf5Open(
    _ file: String, _ what: String, close: @escaping (hid_t) -> herr_t,
    _ call: () -> hid_t
) throws -> HDF5Handle {
    hdf5PrepareThread()
    let id = call()
    guard id >= 0 else { throw ImageFileError.unreadable(file: file, reason: "\(what): \(hdf5Message())") }
    return HDF5Handle(id, close: close)
}

/// Runs an HDF5 call returning a status; throws with the file and HDF5's message when it is negative.
func hdf5Check(_ file: String, _ what: String, writing: Bool = false, _ call: () -> herr_t) throws {
    hdf5PrepareThread()
    guard call() >= 0 else {
        let reason = "\(what): \(hdf5Message())"
        throw writing
            ? ImageFileError.unwritable(file: file, reason: reason)
            : ImageFileError.unreadable(file: file, reason: reason)
    }
}

func openDataset(_ file: HDF5File, _ path: String) throws -> HDF5Handle {
    guard file.exists(path) else { throw ImageFileError.missing(file: file.path, object: path) }
    return try hdf5Open(file.path, "opening dataset \(path)", close: H5Dclose) {
        H5Dopen2(file.handle.id, path, chdf5_p_default())
    }
}

func openObject(_ file: HDF5File, _ path: String) throws -> HDF5Handle {
    guard file.exists(path) else { throw ImageFileError.missing(file: file.path, object: path) }
    return try hdf5Open(file.path, "opening \(path)", close: H5Oclose) {
        H5Oopen(file.handle.id, path, chdf5_p_default())
    }
}

func datasetType(_ file: HDF5File, _ dataset: HDF5Handle, _ path: String) throws -> HDF5Handle {
    try hdf5Open(file.path, "type of \(path)", close: H5Tclose) { H5Dget_type(dataset.id) }
}

/// Deflate's largest possible ratio (zlib's technical details: 1032:1); a filtered dataset that claims more
/// decoded bytes per stored byte than this cannot be honest.
let maximumCompressionRatio = 1032

/// Checks that the dataset's claimed size fits what the file can hold before anything is allocated for it
/// (a 2 KB file's header may claim 4 GB): contiguous storage must lie inside the file, and chunked or compact
/// storage must not claim more than `maximumCompressionRatio` decoded bytes per byte it stores (with an
/// allowance of one 64 KiB block for tiny datasets). Storage never written (fill values only) is accepted up to
/// the same ratio of the file's size.
///
/// - Throws: `ImageFileError.unreadable` naming the dataset, its claimed size and the file's. Rests on
///   `H5Pget_layout`, `H5Dget_offset`, `H5Dget_storage_size` and `H5Fget_filesize`.
func checkStorage(_ file: HDF5File, _ dataset: HDF5Handle, _ path: String) throws {
    let type = try datasetType(file, dataset, path)
    let shape = try extents(file, dataspace(file, dataset, path), path)
    let elementSize = Int(H5Tget_size(type.id))
    let (claimed, overflow) = shape.reduce((elementSize, false)) { acc, extent in
        let (product, o) = acc.0.multipliedReportingOverflow(by: extent)
        return (product, acc.1 || o)
    }
    var fileSize: hsize_t = 0
    guard H5Fget_filesize(file.handle.id, &fileSize) >= 0 else {
        throw ImageFileError.unreadable(file: file.path, reason: "size of the file: \(hdf5Message())")
    }
    let plist = try hdf5Open(file.path, "creation properties of \(path)", close: H5Pclose) {
        H5Dget_create_plist(dataset.id)
    }
    let stored = Int(clamping: H5Dget_storage_size(dataset.id))
    let available = Int(clamping: fileSize)
    let refuse = { (why: String) in
        ImageFileError.unreadable(
            file: file.path,
            reason: "\(path) claims \(shape.map(String.init).joined(separator: " × ")) "
                + "values of \(elementSize) bytes (\(overflow ? "over 2^63 bytes" : ReadLimits.format(bytes: Double(claimed)))), "
                + "but \(why); the file is malformed")
    }
    guard !overflow else { throw refuse("no file can hold that") }
    let offset = H5Dget_offset(dataset.id)
    if H5Pget_layout(plist.id) == H5D_CONTIGUOUS, offset != chdf5_haddr_undef() {
        let (end, o) = Int(clamping: offset).addingReportingOverflow(claimed)
        guard !o, offset < fileSize, end <= available else {
            throw refuse("its contiguous storage at byte \(offset) runs past the file's end (\(available) bytes)")
        }
        return
    }
    let basis = stored > 0 ? stored : available
    let (bound, o) = maximumCompressionRatio.multipliedReportingOverflow(by: basis + (64 << 10))
    guard o || claimed <= bound else {
        throw refuse(
            "it stores \(stored) bytes in a file of \(available), more than \(maximumCompressionRatio):1 "
                + "even if compressed")
    }
}

func dataspace(_ file: HDF5File, _ dataset: HDF5Handle, _ path: String) throws -> HDF5Handle {
    try hdf5Open(file.path, "dataspace of \(path)", close: H5Sclose) { H5Dget_space(dataset.id) }
}

/// The extents of a dataspace (empty for a scalar).
func extents(_ file: HDF5File, _ space: HDF5Handle, _ path: String) throws -> [Int] {
    let rank = H5Sget_simple_extent_ndims(space.id)
    guard rank >= 0 else {
        throw ImageFileError.unreadable(file: file.path, reason: "rank of \(path): \(hdf5Message())")
    }
    var dims = [hsize_t](repeating: 0, count: Int(rank))
    guard H5Sget_simple_extent_dims(space.id, &dims, nil) >= 0 else {
        throw ImageFileError.unreadable(file: file.path, reason: "extents of \(path): \(hdf5Message())")
    }
    return dims.map { Int(clamping: $0) }
}

func simpleSpace(_ file: String, _ shape: [Int]) throws -> HDF5Handle {
    if shape.isEmpty {
        return try hdf5Open(file, "creating scalar dataspace", close: H5Sclose) { H5Screate(H5S_SCALAR) }
    }
    let dims = shape.map { hsize_t($0) }
    return try hdf5Open(file, "creating dataspace", close: H5Sclose) {
        H5Screate_simple(Int32(dims.count), dims, nil)
    }
}

func variableStringType(_ file: String) throws -> HDF5Handle {
    let type = try hdf5Open(file, "string type", close: H5Tclose) { H5Tcopy(chdf5_c_s1()) }
    try hdf5Check(file, "string type", writing: true) { H5Tset_size(type.id, chdf5_variable()) }
    try hdf5Check(file, "string type", writing: true) { H5Tset_cset(type.id, H5T_CSET_UTF8) }
    return type
}

/// Reads every string of a string-typed dataset or attribute, variable- or fixed-length.
func readStringValues(
    file: String, what: String, type: HDF5Handle, count: Int,
    read: (hid_t, UnsafeMutableRawPointer) -> herr_t
) throws -> [String] {
    if count == 0 { return [] }
    if H5Tis_variable_str(type.id) > 0 {
        let memoryType = try variableStringType(file)
        var pointers = [UnsafeMutablePointer<CChar>?](repeating: nil, count: count)
        try hdf5Check(file, "reading \(what)") {
            pointers.withUnsafeMutableBytes { read(memoryType.id, $0.baseAddress!) }
        }
        defer {
            for pointer in pointers { H5free_memory(pointer) }
        }
        return pointers.map { $0.map { String(cString: $0) } ?? "" }
    }
    let size = H5Tget_size(type.id)
    guard size > 0, size < 1 << 20 else {
        throw ImageFileError.unreadable(file: file, reason: "\(what): string size \(size) out of bounds")
    }
    let memoryType = try hdf5Open(file, "string type", close: H5Tclose) { H5Tcopy(type.id) }
    var bytes = [UInt8](repeating: 0, count: count * size)
    try hdf5Check(file, "reading \(what)") { bytes.withUnsafeMutableBytes { read(memoryType.id, $0.baseAddress!) } }
    return (0..<count).map { index in
        let slice = bytes[(index * size)..<((index + 1) * size)]
        let end = slice.firstIndex(of: 0) ?? slice.endIndex
        return String(decoding: slice[slice.startIndex..<end], as: UTF8.self)
    }
}

/// Writes strings as variable-length UTF-8 through `write`.
func writeStringValues(
    _ strings: [String], file: String, type: HDF5Handle,
    write: (hid_t, UnsafeRawPointer) -> herr_t
) throws {
    let cStrings = strings.map { strdup($0) }
    defer { cStrings.forEach { free($0) } }
    var pointers = cStrings.map { UnsafePointer<CChar>($0) }
    try hdf5Check(file, "writing strings", writing: true) {
        pointers.withUnsafeMutableBytes { write(type.id, $0.baseAddress!) }
    }
}
