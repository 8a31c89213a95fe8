import Foundation
import SliceLabKit
import SliceLabNetwork
import SliceLabSupport

/// `slicelab listen --port P --model MODEL.h5 --send-to REMOTE --spool DIR`.
enum ListenCommand: Command {
    static let spec = CommandSpec(
        name: "listen",
        summary: "A DICOM node: receive series (C-STORE), segment each when complete, send the result on.",
        options: [
            OptionSpec("port", .int(1...65535), help: "The port to listen on."),
            OptionSpec(
                "aet", valueName: "AET", help: "SliceLab's AE title (the called AE title is checked).",
                default: "SLICELAB"),
            OptionSpec(
                "allow-aet", valueName: "AET", help: "A calling AE title let in (required unless --allow-any-aet).",
                repeatable: true),
            OptionSpec("allow-any-aet", .flag, help: "Let any calling AE title in."),
            modelOption(),
            OptionSpec("send-to", valueName: "REMOTE", help: "Where results go (dicom://AET@host:port, dicomweb://…)."),
            OptionSpec(
                "spool", valueName: "DIR", help: "The durable spool (received, queued, results, dead letters).",
                required: true),
            OptionSpec(
                "series-idle", .double(0...86400), valueName: "SECONDS",
                help: "A series is complete when none of its instances arrived for this long.", default: "30"),
            OptionSpec(
                "max-attempts", .int(1...100), help: "Sends of a result before it is dead-lettered.", default: "8"),
            OptionSpec("max-associations", .int(1...64), help: "Associations served at once.", default: "8"),
            dicomOutputOption, regularizeOption(help: "Post-processing of each series."), ttaOption(),
            OptionSpec("status", .flag, help: "Print the spool's status.json and exit."),
            OptionSpec(
                "calling-aet", valueName: "AET", help: "The AE title results are sent as.", default: "the --aet"),
            OptionSpec("timeout", .int(1...3600), valueName: "SECONDS", help: "Bound of each send.", default: "30"),
            OptionSpec("remotes", valueName: "FILE", help: "Remotes by name (JSON)."),
            OptionSpec("credentials", valueName: "FILE", help: "DICOMweb credentials (JSON)."),
            maxMemoryOption
        ] + tlsOptions,
        discussion: """
            Every instance is written and synced to the spool before its C-STORE gets a success status; the queue of
            complete series and of results to send is on disk, so after a crash a restart segments and delivers
            every acknowledged series. A result's SOP Instance UID is derived from the source series and the models'
            digest: a resend replaces. Failed sends retry with exponential backoff (1 s doubling to 60 s); after the
            last attempt the result goes to DIR/dead with the reason. One JSON line per event on standard error;
            SIGTERM finishes the current associations and item, then exits. With --tls-key and --tls-cert every
            association is TLS, and with --tls-ca every caller must present a certificate that chains to it; the same
            files serve a dicom+tls:// or https:// --send-to.
            """)

    static func run(_ arguments: ParsedArguments) throws {
        guard let spool = arguments.string("spool") else {
            throw UsageError("slicelab listen: --spool DIR is required")
        }
        if arguments.flag("status") {
            let status = URL(fileURLWithPath: spool).appendingPathComponent("status.json")
            guard let data = FileManager.default.contents(atPath: status.path) else {
                throw UsageError("slicelab listen: \(status.path) does not exist (has a listener run with this spool?)")
            }
            return print(String(decoding: data, as: UTF8.self))
        }
        let models = try modelCheckpoints(arguments, command: "listen")
        guard let port = arguments.int("port"), !models.isEmpty, let sendTo = arguments.string("send-to") else {
            throw UsageError("slicelab listen: --port, --model and --send-to are required")
        }
        let allowed = arguments.strings("allow-aet")
        guard !allowed.isEmpty || arguments.flag("allow-any-aet") else {
            throw UsageError(
                "slicelab listen: name the calling AE titles let in (--allow-aet AET) or give --allow-any-aet")
        }
        let aet = arguments.string("aet") ?? "SLICELAB"
        let remote = try remote(sendTo, arguments, command: "listen", callingAET: aet)
        var options = ListenWorkflow.Options(port: port, models: models, sendTo: remote, spool: spool)
        options.aet = aet
        (options.allowedAETs, options.allowAnyAET) = (allowed, arguments.flag("allow-any-aet"))
        options.seriesIdle = arguments.double("series-idle") ?? 30
        options.maxAttempts = arguments.int("max-attempts") ?? 8
        options.maxAssociations = arguments.int("max-associations") ?? 8
        options.dicomOutput = arguments.choice("dicom-output") ?? .seg
        options.postProcessing.pipeline = try regularizePipeline(arguments, command: "listen")
        options.augmentation = arguments.choice("tta")
        options.limits = try readLimits(arguments, command: "listen")
        for aet in [options.aet] + allowed where !Remote.isValidAET(aet) {
            throw UsageError("slicelab listen: '\(aet)' is not an AE title (1–16 characters)")
        }
        let stop = Locked(false)
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let sources = [SIGTERM, SIGINT].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.withLock { $0 = true } }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }
        try ListenWorkflow.run(options, log: { line in FileHandle.standardError.write(Data((line + "\n").utf8)) }) {
            stop.withLock { $0 }
        }
    }
}
