import FuzzSupport
import SliceLabDatasets
import SliceLabIO
import SliceLabInference
import SliceLabKit
import SliceLabResults

/// The command-line parser against every real subcommand declaration (`Sources/slicelab/Commands`, linked
/// here): the input is a command index byte then NUL-separated arguments; parsing returns `ParsedArguments`
/// or throws a `UsageError` naming the command, and every typed accessor answers without trapping.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCLI(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let spec = commands[Int(bytes[0]) % commands.count].spec
    let arguments = bytes.dropFirst().split(separator: 0, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    do {
        let parsed = try ParsedArguments.parse(arguments, spec: spec)
        for option in spec.options {
            _ = (
                parsed.flag(option.name), parsed.strings(option.name), parsed.int(option.name),
                parsed.double(option.name), parsed.doubles(option.name)
            )
        }
        _ = (0...spec.positionals.count).map { parsed.positional($0) }
    } catch let error as UsageError {
        guard error.message.hasPrefix("slicelab \(spec.name)") else {
            FuzzInput.fail("usage error does not name the command \(spec.name): \(error.message)")
        }
    } catch {
        FuzzInput.fail("untyped error \(type(of: error)): \(error)")
    }
    _ = spec.helpText()
    return 0
}

/// The executable's log line, which the linked command declarations refer to (never called while parsing).
func standardError(_ line: String) {}
