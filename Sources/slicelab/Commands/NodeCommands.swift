import Foundation
import SliceLabKit
import SliceLabNetwork

/// Options every node command takes.
private let remoteOptions = [
    OptionSpec(
        "remotes", valueName: "FILE",
        help: "A JSON object of names to remotes ({\"pacs\": \"dicom://ORTHANC@10.0.0.5:4242\"}): REMOTE may be a name."
    ),
    OptionSpec("calling-aet", valueName: "AET", help: "SliceLab's AE title.", default: "SLICELAB"),
    OptionSpec(
        "credentials", valueName: "FILE",
        help: "DICOMweb credentials: JSON {\"bearer\": TOKEN} or {\"basic\": \"user:password\"}.",
        default: "$SLICELAB_DICOMWEB_TOKEN or $SLICELAB_DICOMWEB_BASIC, else none"),
    OptionSpec("timeout", .int(1...3600), valueName: "SECONDS", help: "Bound of each network exchange.", default: "30")
]

private func remote(_ text: String, _ arguments: ParsedArguments) -> RemoteOptions {
    var options = RemoteOptions(remote: text)
    options.remotesFile = arguments.string("remotes")
    options.credentialsFile = arguments.string("credentials")
    options.callingAET = arguments.string("calling-aet") ?? "SLICELAB"
    options.timeoutSeconds = arguments.int("timeout") ?? 30
    return options
}

private let remoteHelp =
    "dicom://AET@host:port (DIMSE), dicomweb://host:port/path or http(s)://host/path (DICOMweb), or a name in --remotes."

/// `slicelab query REMOTE`.
enum QueryCommand: Command {
    static let spec = CommandSpec(
        name: "query",
        summary: "List the studies or series of a PACS that match (C-FIND or QIDO-RS).",
        positionals: [PositionalSpec("REMOTE", help: remoteHelp)],
        options: [
            OptionSpec("level", .choice(of: DICOMQuery.Level.self), help: "What to list.", default: "study"),
            OptionSpec("patient-id", valueName: "ID", help: "Patient ID (wildcards * and ? as the peer allows)."),
            OptionSpec("modality", valueName: "CODE", help: "Modality (CT, MR, SEG…)."),
            OptionSpec("study-date", valueName: "FROM-TO", help: "YYYYMMDD-YYYYMMDD, either side open."),
            OptionSpec("study", valueName: "UID", help: "With --level series: the study's series."),
            OptionSpec("json", .flag, help: "One JSON array of matches instead of a table.")
        ] + remoteOptions)

    static func run(_ arguments: ParsedArguments) throws {
        guard let text = arguments.positional(0) else { throw UsageError("slicelab query: give REMOTE") }
        var query = DICOMQuery(level: arguments.choice("level") ?? .study)
        (query.patientID, query.modality) = (arguments.string("patient-id"), arguments.string("modality"))
        (query.studyDate, query.studyInstanceUID) = (arguments.string("study-date"), arguments.string("study"))
        if let date = query.studyDate,
            date.range(of: #"^(\d{8})?-?(\d{8})?$"#, options: .regularExpression) == nil || date == "-"
        {
            throw UsageError(
                "slicelab query: --study-date: expected YYYYMMDD, YYYYMMDD-YYYYMMDD, -YYYYMMDD or YYYYMMDD-")
        }
        let matches = try QueryWorkflow.run(query, remote: remote(text, arguments))
        if arguments.flag("json") {
            let data = try JSONSerialization.data(withJSONObject: matches, options: [.sortedKeys, .prettyPrinted])
            return print(String(decoding: data, as: UTF8.self))
        }
        let columns =
            query.level == .study
            ? ["StudyInstanceUID", "PatientID", "StudyDate", "ModalitiesInStudy", "NumberOfStudyRelatedInstances"]
            : ["SeriesInstanceUID", "Modality", "SeriesNumber", "NumberOfSeriesRelatedInstances", "SeriesDescription"]
        print(columns.joined(separator: "\t"))
        for match in matches { print(columns.map { match[$0] ?? "" }.joined(separator: "\t")) }
        FileHandle.standardError.write(Data("query: \(matches.count) \(query.level.rawValue)(s)\n".utf8))
    }
}

/// `slicelab pull REMOTE UID… --out DIR`.
enum PullCommand: Command {
    static let spec = CommandSpec(
        name: "pull",
        summary: "Retrieve studies or series from a PACS into DIR/<study>/<series>/<sop>.dcm (C-GET or WADO-RS).",
        positionals: [
            PositionalSpec("REMOTE", help: remoteHelp),
            PositionalSpec("UID", help: "Study or series instance UIDs.", variadic: true)
        ],
        options: [OptionSpec("out", valueName: "DIR", help: "Where the instances go.", required: true)] + remoteOptions)

    static func run(_ arguments: ParsedArguments) throws {
        let uids = Array(arguments.positionals.dropFirst())
        guard let text = arguments.positional(0), !uids.isEmpty, let output = arguments.string("out") else {
            throw UsageError("slicelab pull: give REMOTE, at least one UID and --out DIR")
        }
        let pulled = try PullWorkflow.run(uids: uids, remote: remote(text, arguments), output: output) {
            FileHandle.standardError.write(Data(($0 + "\n").utf8))
        }
        for problem in pulled.problems { FileHandle.standardError.write(Data("pull: \(problem)\n".utf8)) }
        print("pulled \(pulled.files.count) instance(s) into \(output)")
        if !pulled.problems.isEmpty { exit(1) }
    }
}

/// `slicelab push FILE|DIR… --to REMOTE`.
enum PushCommand: Command {
    static let spec = CommandSpec(
        name: "push",
        summary: "Send DICOM files or folders to a PACS (C-STORE or STOW-RS), reporting every instance.",
        positionals: [PositionalSpec("PATH", help: "DICOM files or folders (searched recursively).", variadic: true)],
        options: [OptionSpec("to", valueName: "REMOTE", help: remoteHelp, required: true)] + remoteOptions)

    static func run(_ arguments: ParsedArguments) throws {
        guard !arguments.positionals.isEmpty, let text = arguments.string("to") else {
            throw UsageError("slicelab push: give PATH… and --to REMOTE")
        }
        let sent = try PushWorkflow.run(paths: arguments.positionals, remote: remote(text, arguments))
        for result in sent {
            let status = result.status.map { String(format: "0x%04X", $0) } ?? "-"
            print(
                "\(result.succeeded ? "ok" : "FAILED")\t\(status)\t\(result.file)\(result.problem.map { "\t\($0)" } ?? "")"
            )
        }
        let failed = sent.filter { !$0.succeeded }.count
        FileHandle.standardError.write(Data("push: \(sent.count - failed) of \(sent.count) instance(s) stored\n".utf8))
        if failed > 0 { exit(1) }
    }
}
