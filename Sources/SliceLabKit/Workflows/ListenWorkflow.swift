import DICOM
import Foundation
import SliceLabIO
import SliceLabInference
import SliceLabNetwork
import SliceLabSupport

/// `slicelab listen`: a Store SCP whose series are segmented as they complete and whose results are sent on,
/// with every step durable in the spool (`Spool`).
public enum ListenWorkflow {
    public struct Options: Sendable {
        public var port: Int
        public var aet = "SLICELAB"
        public var allowedAETs: [String] = []
        public var allowAnyAET = false
        public var models: [String]
        public var sendTo: RemoteOptions
        public var spool: String
        /// A series is complete when none of its instances arrived for this long.
        public var seriesIdle: Double = 30
        public var postProcessing = SegmentPostProcessing()
        public var dicomOutput: SegmentationExport.DICOMOutput = .seg
        public var augmentation: TestTimeAugmentation?
        public var maxAttempts = 8
        public var maxBackoff: Double = 60
        public var maxAssociations = 8
        public var maxInstanceBytes = 1 << 30
        public var limits: ReadLimits = .standard

        public init(port: Int, models: [String], sendTo: RemoteOptions, spool: String) {
            (self.port, self.models, self.sendTo, self.spool) = (port, models, sendTo, spool)
        }
    }

    /// Runs until `shouldStop` says so (SIGTERM): then the listener finishes its current associations, the item
    /// in hand is finished, the status is written, and it returns.
    ///
    /// - Throws: what prevents starting (the spool, the model, the port); later failures are logged, counted in
    ///   the status and dead-lettered, and the node keeps serving.
    public static func run(_ options: Options, log: @escaping @Sendable (String) -> Void, shouldStop: () -> Bool) throws
    {
        let spool = try Spool(options.spool)
        let remote = try options.sendTo.resolved()
        var segmenter = try VolumeSegmenter.load(checkpoints: options.models, limits: options.limits)
        _ = segmenter.augment(options.augmentation ?? segmenter.defaultAugmentation)
        let digest = SHA256.hex(
            Array(options.models.map { FileManager.default.contents(atPath: $0) ?? Data() }.joined()))
        var settings = StoreListener.Settings(
            port: options.port, aet: options.aet, incoming: spool.incoming.path, received: spool.received.path,
            allowedAETs: options.allowedAETs, allowAnyAET: options.allowAnyAET)
        (settings.maxAssociations, settings.maxInstanceBytes) = (options.maxAssociations, options.maxInstanceBytes)
        // With this node's key and certificate, every association is TLS.
        if let tls = options.sendTo.tls, tls.key != nil { settings.tls = tls }
        let listener = try StoreListener(settings)
        let stopped = DispatchSemaphore(value: 0)
        let failure = Locked<String?>(nil)
        Thread.detachNewThread {
            do { try listener.run() } catch { failure.withLock { $0 = "\(error)" } }
            stopped.signal()
        }
        log(
            event(
                "listening",
                ["port": options.port, "aet": options.aet, "spool": spool.root.path, "tls": settings.tls != nil]))
        var lastError: String?
        var written: NSDictionary?
        while !shouldStop() {
            if let error = failure.withLock({ $0 }) {
                log(event("listener_failed", ["reason": error]))
                throw DICOMError.network(peer: "\(options.aet) on port \(options.port)", reason: error)
            }
            do {
                for series in try spool.queueCompleteSeries(idle: options.seriesIdle) {
                    log(event("series_complete", ["series": series]))
                }
                if let (series, folder) = spool.queued().first {
                    lastError =
                        segment(
                            series, folder: folder, spool: spool, segmenter: segmenter, digest: digest,
                            options: options, log: log) ?? lastError
                }
                for (series, file) in spool.dueResults() {
                    lastError =
                        send(series, file: file, spool: spool, remote: remote, options: options, log: log) ?? lastError
                }
                written = try spool.writeStatus(lastError: lastError, unlessSameAs: written)
            } catch {
                lastError = "\(error)"
                log(event("spool_failed", ["reason": lastError ?? ""]))
            }
            Thread.sleep(forTimeInterval: 0.25)
        }
        listener.stop()
        stopped.wait()
        try spool.writeStatus(lastError: lastError)
        log(event("stopped", [:]))
    }

    /// The result of a series: its Series and SOP Instance UIDs derived from the source series and the models'
    /// digest, so a resend replaces rather than duplicates.
    static func resultUIDs(series: String, digest: String, kind: SegmentationExport.DICOMOutput) -> (
        series: String, instance: String
    ) {
        (
            SHA256.uid(for: "slicelab-result-series|\(series)|\(digest)|\(kind.rawValue)"),
            SHA256.uid(for: "slicelab-result|\(series)|\(digest)|\(kind.rawValue)")
        )
    }

    /// Segments one queued series into its result; a series the model refuses goes to the dead letters.
    private static func segment(
        _ series: String, folder: URL, spool: Spool, segmenter: VolumeSegmenter, digest: String, options: Options,
        log: (String) -> Void
    ) -> String? {
        do {
            let output = try spool.resultFile(series)
            let result = try SeriesSegmentation.segment(
                folder.path, output: output.path, segmenter: segmenter, postProcessing: options.postProcessing,
                limits: options.limits)
            try SeriesSegmentation.write(
                result, as: options.dicomOutput, checkpoint: options.models[0], classCount: segmenter.classCount,
                uids: resultUIDs(series: series, digest: digest, kind: options.dicomOutput), to: output.path)
            try spool.finish(series: series)
            log(event("segmented", ["series": series, "slices": result.series.slices.count]))
            return nil
        } catch {
            try? spool.deadLetter(series: series, reason: "\(error)")
            log(event("dead_letter", ["series": series, "reason": "\(error)"]))
            return "\(error)"
        }
    }

    /// Sends one result; a failure waits its backoff, and after the last attempt the result is dead-lettered.
    private static func send(
        _ series: String, file: URL, spool: Spool, remote: Remote, options: Options, log: (String) -> Void
    ) -> String? {
        let reason: String
        do {
            let outcome = try DICOMTransfer.push([file.path], to: remote, using: options.sendTo.connection())
            if outcome.allSatisfy(\.succeeded), !outcome.isEmpty {
                try spool.markSent(series: series, resultUID: outcome[0].sopInstanceUID ?? "")
                log(event("sent", ["series": series, "to": "\(remote)"]))
                return nil
            }
            reason = outcome.map { $0.problem ?? String(format: "status 0x%04X", $0.status ?? 0) }.joined(
                separator: "; ")
        } catch {
            reason = "\(error)"
        }
        let dead =
            (try? spool.recordFailure(
                series: series, error: reason, maxAttempts: options.maxAttempts, maxBackoff: options.maxBackoff))
            ?? false
        log(event(dead ? "dead_letter" : "send_failed", ["series": series, "reason": reason]))
        return reason
    }

    /// One JSON log line.
    static func event(_ name: String, _ fields: [String: Any]) -> String {
        var object = fields
        (object["event"], object["time"]) = (name, Int(Date().timeIntervalSince1970))
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
