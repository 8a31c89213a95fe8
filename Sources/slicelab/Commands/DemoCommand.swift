import Foundation
import SliceLabIO
import SliceLabKit

/// `slicelab demo`: the main job on the embedded data (issue #8).
enum DemoCommand: Command {
    static let spec = CommandSpec(
        name: "demo",
        summary: "Run the main job on the bundled data: segment, cluster, evaluate, compare, report.",
        options: [
            OptionSpec("out", valueName: "DIR", help: "Output folder.", default: "demo-output"),
            OptionSpec("threads", .int(1...1024), help: "Compute threads.", default: "the machine's cores")
        ],
        discussion: """
            Writes DIR/results.h5 (every run of both bundled sets), DIR/<set>/index.html (the report) and
            DIR/<set>/overlays/*.png, and prints the comparison table of each set.
            """)

    static func run(_ arguments: ParsedArguments) throws {
        let output = arguments.string("out") ?? "demo-output"
        let start = Date()
        do {
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        } catch {
            throw InputError.unsupportedOutput(
                file: output, reason: "cannot create the folder: \(error.localizedDescription)")
        }
        for set in DemoData.sets {
            standardError("demo: \(set)")
            let outcome = try CompareWorkflow.run(
                DemoData.compareOptions(set: set, output: output, threads: arguments.int("threads")))
            print("\n== \(set): \(outcome.runs.first?.caseIDs.count ?? 0) test cases")
            for note in outcome.notes { standardError("demo: \(note)") }
            print(CompareWorkflow.table(outcome), terminator: "")
        }
        print(
            String(
                format: "\nwrote %@/results.h5, %@/<set>/index.html and overlays in %.1f s", output, output,
                Date().timeIntervalSince(start)))
    }
}
