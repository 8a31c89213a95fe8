import Foundation
import TestSupport
import Testing

/// End-to-end tests of the built `slicelab`: exit codes, help and error lines.
@Suite struct CLITests {
    static let subcommands = ["info", "convert", "segment", "cluster", "evaluate", "compare", "merge", "train", "demo"]

    @Test func helpListsEverySubcommand() throws {
        let result = try TestSupport.slicelab(["--help"])
        #expect(result.status == 0)
        for name in Self.subcommands {
            #expect(result.standardOutput.contains("\n  \(name) "), "missing \(name)")
        }
    }

    @Test(arguments: subcommands)
    func everySubcommandHasHelp(name: String) throws {
        let result = try TestSupport.slicelab([name, "--help"])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains("Usage: slicelab \(name)"))
    }

    @Test func unknownCommandsAndOptionsExitTwoWithOneLine() throws {
        for arguments in [
            ["frobnicate"],
            [
                "cluster", "in.png", "--classes", "3", "--method", "kmeans", "--out", "o.h5",
                "--bogus"
            ],
            ["cluster", "in.png", "--classes", "x", "--method", "kmeans", "--out", "o.h5"],
            ["evaluate", "--pred", "p"], []
        ] {
            let result = try TestSupport.slicelab(arguments)
            #expect(result.status == 2, "\(arguments)")
            let lines = result.standardError.split(separator: "\n")
            #expect(lines.count == 1, "\(arguments): \(result.standardError)")
            #expect(lines.first?.hasPrefix("slicelab") == true)
        }
    }
}
