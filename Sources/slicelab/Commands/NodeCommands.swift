import Foundation
import SliceLabKit
import SliceLabNetwork

/// Options every node command takes.
private let remoteOptions =
    [
        OptionSpec(
            "remotes", valueName: "FILE",
            help:
                "A JSON object of names to remotes ({\"pacs\": \"dicom://ORTHANC@10.0.0.5:4242\"}): REMOTE may be a name."
        ),
        OptionSpec("calling-aet", valueName: "AET", help: "SliceLab's AE title.", default: "SLICELAB"),
        OptionSpec(
            "credentials", valueName: "FILE",
            help: "DICOMweb credentials: JSON {\"bearer\": TOKEN} or {\"basic\": \"user:password\"}.",
            default: "$SLICELAB_DICOMWEB_TOKEN or $SLICELAB_DICOMWEB_BASIC, else none"),
        OptionSpec(
            "timeout", .int(1...3600), valueName: "SECONDS", help: "Bound of each network exchange.", default: "30")
    ] + tlsOptions

/// TLS options: a node's identity and trust, for dicom+tls:// associations, HTTPS and `listen`.
let tlsOptions = [
    OptionSpec("tls-key", valueName: "PEM", help: "This node's private key (with --tls-cert)."),
    OptionSpec("tls-cert", valueName: "PEM", help: "This node's certificate (with --tls-key)."),
    OptionSpec(
        "tls-ca", valueName: "PEM", help: "Certificates a peer's must chain to.",
        default: "the system's (/etc/ssl/certs)")
]

/// The remote and how to reach it, from the options every node command takes.
func remote(_ text: String, _ arguments: ParsedArguments, command: String, callingAET: String = "SLICELAB") throws
    -> RemoteOptions
{
    var options = RemoteOptions(remote: text)
    options.remotesFile = arguments.string("remotes")
    options.credentialsFile = arguments.string("credentials")
    options.callingAET = arguments.string("calling-aet") ?? callingAET
    options.timeoutSeconds = arguments.int("timeout") ?? 30
    (options.tlsKey, options.tlsCertificate) = (arguments.string("tls-key"), arguments.string("tls-cert"))
    options.tlsTrust = arguments.string("tls-ca")
    guard (options.tlsKey == nil) == (options.tlsCertificate == nil) else {
        throw UsageError("slicelab \(command): --tls-key and --tls-cert go together")
    }
    return options
}

private let remoteHelp =
    "dicom://AET@host:port or dicom+tls://AET@host:port (DIMSE), dicomweb://host:port/path or http(s)://host/path "
    + "(DICOMweb), or a name in --remotes."

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
        let matches = try QueryWorkflow.run(query, remote: remote(text, arguments, command: "query"))
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
        summary:
            "Retrieve studies or series from a PACS into DIR/<study>/<series>/<sop>.dcm (C-GET, C-MOVE or WADO-RS).",
        positionals: [
            PositionalSpec("REMOTE", help: remoteHelp),
            PositionalSpec("UID", help: "Study or series instance UIDs.", variadic: true)
        ],
        options: [
            OptionSpec("out", valueName: "DIR", help: "Where the instances go.", required: true),
            OptionSpec(
                "move-destination", valueName: "AET",
                help: "C-MOVE instead of C-GET, to this AE title: SliceLab's own, listening on --port while it pulls "
                    + "(the PACS must know it at this host and port)."),
            OptionSpec(
                "port", .int(1...65535), help: "With --move-destination: the port to receive on.", default: "11112"),
            OptionSpec(
                "allow-aet", valueName: "AET", help: "With --move-destination: a calling AE title let in.",
                repeatable: true, default: "the remote's")
        ] + remoteOptions)

    static func run(_ arguments: ParsedArguments) throws {
        let uids = Array(arguments.positionals.dropFirst())
        guard let text = arguments.positional(0), !uids.isEmpty, let output = arguments.string("out") else {
            throw UsageError("slicelab pull: give REMOTE, at least one UID and --out DIR")
        }
        var move: MoveReceiver?
        if let destination = arguments.string("move-destination") {
            for aet in [destination] + arguments.strings("allow-aet") where !Remote.isValidAET(aet) {
                throw UsageError("slicelab pull: '\(aet)' is not an AE title (1–16 characters)")
            }
            move = MoveReceiver(
                aet: destination, port: arguments.int("port") ?? 11112, allowedAETs: arguments.strings("allow-aet"))
        }
        let options = try remote(text, arguments, command: "pull")
        let pulled = try PullWorkflow.run(uids: uids, remote: options, output: output, move: move) {
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
        let sent = try PushWorkflow.run(
            paths: arguments.positionals, remote: remote(text, arguments, command: "push"))
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
