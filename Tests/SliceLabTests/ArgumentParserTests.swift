import Testing

@testable import slicelab

@Suite struct ArgumentParserTests {
    let spec = CommandSpec(
        name: "demo-cmd", summary: "A command for tests.",
        positionals: [PositionalSpec("INPUT", help: "input"), PositionalSpec("EXTRA", help: "extra", optional: true)],
        options: [
            OptionSpec("out", help: "output", required: true),
            OptionSpec("count", .int(1...10), help: "a count", default: "3"),
            OptionSpec("rate", .double(0...1), help: "a rate"),
            OptionSpec("mode", .choice(["fast", "slow"]), help: "a mode"),
            OptionSpec("spacing", .doubles, help: "a list"),
            OptionSpec("verbose", .flag, help: "talk"),
            OptionSpec("tag", help: "tags", repeatable: true)
        ])

    @Test func parsesEveryKindOfOption() throws {
        let parsed = try ParsedArguments.parse(
            [
                "in.dcm", "--out", "o.h5", "--count=4", "--rate", "0.5", "--mode", "slow", "--spacing", "2.5,-0.8,0.8",
                "--verbose", "--tag", "a", "--tag", "b", "extra"
            ], spec: spec)
        #expect(parsed.positionals == ["in.dcm", "extra"])
        #expect(parsed.string("out") == "o.h5")
        #expect(parsed.int("count") == 4)
        #expect(parsed.double("rate") == 0.5)
        #expect(parsed.string("mode") == "slow")
        #expect(parsed.doubles("spacing") == [2.5, -0.8, 0.8])
        #expect(parsed.flag("verbose"))
        #expect(parsed.strings("tag") == ["a", "b"])
        #expect(parsed.int("missing") == nil)
    }

    @Test(arguments: [
        (["x", "--out", "o", "--bogus"], "slicelab demo-cmd: unknown option '--bogus'; see 'slicelab demo-cmd --help'"),
        (["x", "--out"], "slicelab demo-cmd: --out needs a value (OUT)"),
        (["x"], "slicelab demo-cmd: missing required option --out OUT"),
        (["--out", "o"], "slicelab demo-cmd: missing argument INPUT"),
        (["x", "y", "z", "--out", "o"], "slicelab demo-cmd: unexpected argument 'z'"),
        (["x", "--out", "o", "--count", "two"], "slicelab demo-cmd: --count: 'two' is not an integer"),
        (["x", "--out", "o", "--count", "11"], "slicelab demo-cmd: --count: 11 is outside 1...10"),
        (["x", "--out", "o", "--rate", "nan"], "slicelab demo-cmd: --rate: 'nan' is not a number"),
        (["x", "--out", "o", "--mode", "medium"], "slicelab demo-cmd: --mode: 'medium' is not one of fast, slow"),
        (
            ["x", "--out", "o", "--spacing", "1,,2"],
            "slicelab demo-cmd: --spacing: '1,,2' is not a comma-separated list of numbers"
        ),
        (["x", "--out", "o", "--verbose=yes"], "slicelab demo-cmd: --verbose takes no value"),
        (["x", "--out", "o", "--out", "p"], "slicelab demo-cmd: --out given more than once"),
        (["x", "-o", "p"], "slicelab demo-cmd: unknown option '-o' (options are spelled --name)")
    ])
    func rejectsBadUsageWithOneClearLine(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try ParsedArguments.parse(arguments, spec: spec) }
    }

    @Test func negativeNumbersAndDoubleDashArePositionals() throws {
        let parsed = try ParsedArguments.parse(["--out", "o", "--", "--weird-name"], spec: spec)
        #expect(parsed.positionals == ["--weird-name"])
        let negative = try ParsedArguments.parse(["-3", "--out", "o"], spec: spec)
        #expect(negative.positionals == ["-3"])
    }

    @Test func helpIsGeneratedFromTheDeclarations() {
        let help = spec.helpText()
        #expect(help.contains("Usage: slicelab demo-cmd INPUT [EXTRA] --out OUT [options]"))
        #expect(help.contains("--count N"))
        #expect(help.contains("[default: 3]"))
        #expect(help.contains("--mode fast|slow"))
        #expect(help.contains("(repeatable)"))
    }
}
