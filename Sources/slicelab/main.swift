import Foundation
import SliceLabKit
import SliceLabSupport

let programHelp = """
    slicelab \(sliceLabVersion): segment DICOM slices with DeepLabV3 and a classical baseline, and evaluate them.

    Usage: slicelab <command> [arguments] [options]

    Commands:
    \(commands.map { "  " + $0.spec.name.padding(toLength: 10, withPad: " ", startingAt: 0) + $0.spec.summary }
        .joined(separator: "\n"))

    Run 'slicelab <command> --help' for a command's arguments and options.
    """

func standardError(_ line: String) {
    FileHandle.standardError.write((line + "\n").data(using: .utf8)!)
}

func main() -> Int32 {
    var arguments = Array(CommandLine.arguments.dropFirst())
    guard let name = arguments.first else {
        standardError("slicelab: missing command; see 'slicelab --help'")
        return 2
    }
    arguments.removeFirst()
    if name == "--help" || name == "-h" || name == "help" {
        print(programHelp)
        return 0
    }
    if name == "--version" {
        print(versionDescription)
        return 0
    }
    guard let command = commands.first(where: { $0.spec.name == name }) else {
        standardError("slicelab: unknown command '\(name)'; see 'slicelab --help'")
        return 2
    }
    if arguments.contains("--help") || arguments.contains("-h") {
        print(command.spec.helpText(), terminator: "")
        return 0
    }
    do {
        let parsed = try ParsedArguments.parse(arguments, spec: command.spec)
        try command.run(parsed)
        return 0
    } catch {
        return report(error, command: name)
    }
}

exit(main())
