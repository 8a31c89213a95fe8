import Foundation
import Metrics
import SliceLabDatasets
import SliceLabIO
import SliceLabSupport

/// `slicelab merge PART… --out RESULTS.h5`: the parts that `compare --shard` or `evaluate --shard` wrote, joined
/// into the results file one process would have written.
///
/// Cases come in the run's order (the split's order, recorded in every part), every per-case array (metrics,
/// confusion, spacing, label maps) is copied bit for bit, and the summaries, their bootstrap intervals and the
/// paired comparisons are computed once over all cases by the code a single run uses (`ResultsFile.write`,
/// `ResultsComparison`). An MPI job calls `merge` on rank 0 once every rank has written its part.
public enum ResultsMerge {
    /// What a merge produced.
    public struct Outcome {
        public var runs: [ResultsRun]
        public var comparisons: [ResultsComparison]
        /// Cases skipped as bad in the run (listed by every part), with the reason.
        public var skipped: [(name: String, reason: String)]
        public var record: ShardRecord
    }

    /// Checks the parts belong to one run and cover each of its shards once, then writes the merged file.
    ///
    /// - Parameters:
    ///   - parts: the part files, in any order.
    ///   - output: the merged results file, written atomically (a failure leaves nothing there).
    ///   - overwrite: replace an existing `output`.
    /// - Throws: `DatasetError` (not a part, different configurations, missing or duplicate shards, an output that
    ///   exists or is a part), `ResultsError`, `ImageFileError` naming the file.
    public static func merge(parts: [String], output: String, overwrite: Bool = false) throws -> Outcome {
        let resolved = URL(fileURLWithPath: output).standardizedFileURL.path
        if parts.contains(where: { URL(fileURLWithPath: $0).standardizedFileURL.path == resolved })
            || (!overwrite && FileManager.default.fileExists(atPath: output))
        {
            throw DatasetError.outputExists(file: output)
        }
        try prepareOutputLocation(output)
        let records = try parts.map { part -> ShardRecord in
            guard let record = try ResultsFile.readShard(from: part) else { throw DatasetError.notAPart(file: part) }
            return record
        }
        guard let first = records.first else { throw DatasetError.missingShards(indices: [], count: 0) }
        try checkTogether(records, parts: parts)

        // Where each case of the run is: (part, position in that part).
        var location: [String: (part: Int, position: Int)] = [:]
        for (partIndex, record) in records.enumerated() {
            for (position, name) in record.cases.enumerated() {
                if let earlier = location[name] {
                    throw DatasetError.inconsistentPart(
                        file: parts[partIndex],
                        reason: "case '\(name)' is also in "
                            + "\(parts[earlier.part])")
                }
                location[name] = (partIndex, position)
            }
        }
        if let absent = first.caseOrder.first(where: { location[$0] == nil }) {
            throw DatasetError.inconsistentPart(file: parts[0], reason: "case '\(absent)' of the run is in no part")
        }
        if location.count != first.caseOrder.count {
            let stray = location.keys.filter { !first.caseOrder.contains($0) }.sorted()
            throw DatasetError.inconsistentPart(
                file: parts[location[stray[0]]!.part],
                reason: "case '\(stray[0])' is not in the run's case list")
        }

        var runs: [ResultsRun] = []
        for name in first.runOrder {
            let pieces = try parts.indices.map { index -> (run: ResultsRun, labels: [String: LabelMap]) in
                let run = try ResultsFile.readRun(name, from: parts[index])
                guard run.caseIDs == records[index].cases else {
                    throw DatasetError.inconsistentPart(
                        file: parts[index],
                        reason: "run '\(name)' holds cases "
                            + "\(run.caseIDs.prefix(3)) but /shard lists \(records[index].cases.prefix(3))")
                }
                return (run, try ResultsFile.readLabels(name, from: parts[index]))
            }
            try checkSameRun(pieces.map(\.run), parts: parts)
            var merged = try joined(pieces, order: first.caseOrder, location: location)
            if first.command == "evaluate" { merged.configJSON = try evaluateConfig(merged.configJSON, output: output) }
            runs.append(merged)
        }
        let comparisons = try first.comparisons.map { pair -> ResultsComparison in
            guard let a = runs.first(where: { $0.name == pair.a }), let b = runs.first(where: { $0.name == pair.b })
            else {
                throw DatasetError.inconsistentPart(
                    file: parts[0],
                    reason: "comparison \(pair.a)__\(pair.b) names a "
                        + "run the part does not hold")
            }
            return try ResultsComparison(a, b)
        }
        try ResultsFile.write(runs: runs, comparisons: comparisons, to: output, overwrite: true, updating: false)
        return Outcome(runs: runs, comparisons: comparisons, skipped: first.skipped, record: first)
    }

    // MARK: - Checks

    /// The parts come from one run (command, configuration, cases, runs, skips) and hold each shard once.
    public static func checkTogether(_ records: [ShardRecord], parts: [String]) throws {
        let first = records[0]
        for (index, record) in records.enumerated().dropFirst() {
            func mismatch(_ reason: String) -> DatasetError {
                .configurationMismatch(file: parts[index], other: parts[0], reason: reason)
            }
            if record.command != first.command {
                throw mismatch("written by '\(record.command)' and '\(first.command)'")
            }
            if record.shard.count != first.shard.count {
                throw mismatch("split into \(record.shard.count) and \(first.shard.count) shards")
            }
            if record.configJSON != first.configJSON {
                throw mismatch("configuration \(record.configJSON) differs from \(first.configJSON)")
            }
            if record.caseOrder != first.caseOrder {
                throw mismatch(
                    "their runs list different cases (\(record.caseOrder.count) and "
                        + "\(first.caseOrder.count))")
            }
            if record.runOrder != first.runOrder {
                throw mismatch("runs \(record.runOrder) and \(first.runOrder)")
            }
            if record.skipped.map(\.name) != first.skipped.map(\.name) {
                throw mismatch("skipped cases \(record.skipped.map(\.name)) and \(first.skipped.map(\.name))")
            }
        }
        var byIndex: [Int: Int] = [:]
        for (index, record) in records.enumerated() {
            if let other = byIndex[record.shard.index] {
                throw DatasetError.duplicateShard(index: record.shard.index, files: [parts[other], parts[index]])
            }
            byIndex[record.shard.index] = index
        }
        let missing = (0..<first.shard.count).filter { byIndex[$0] == nil }
        guard missing.isEmpty else { throw DatasetError.missingShards(indices: missing, count: first.shard.count) }
    }

    /// The parts of one run agree on everything but their cases.
    static func checkSameRun(_ pieces: [ResultsRun], parts: [String]) throws {
        let first = pieces[0]
        for (index, run) in pieces.enumerated().dropFirst() {
            let fields: [(String, Bool)] = [
                ("method", run.method == first.method), ("model", run.model == first.model),
                ("dataset", run.dataset == first.dataset), ("classes", run.classNames == first.classNames),
                ("evaluation settings", run.settings == first.settings),
                ("bootstrap seed", run.bootstrapSeed == first.bootstrapSeed),
                ("bootstrap resamples", run.bootstrapResamples == first.bootstrapResamples),
                ("post-processing", run.postprocessingJSON == first.postprocessingJSON),
                ("metrics", run.metrics.metrics == first.metrics.metrics),
                ("config", comparable(run.configJSON) == comparable(first.configJSON))
            ]
            if let field = fields.first(where: { !$0.1 }) {
                throw DatasetError.configurationMismatch(
                    file: parts[index], other: parts[0],
                    reason: "run '\(run.name)' differs in its \(field.0)")
            }
        }
    }

    /// A run's configuration without what differs between shards (an `evaluate` run records its output).
    static func comparable(_ json: String) -> String {
        (try? evaluateConfig(json, output: "")) ?? json
    }

    // MARK: - Joining

    /// One run over all cases in `order`, each case's arrays copied from the part that holds it.
    static func joined(
        _ pieces: [(run: ResultsRun, labels: [String: LabelMap])], order: [String],
        location: [String: (part: Int, position: Int)]
    ) throws -> ResultsRun {
        var run = pieces[0].run
        let k = run.classCount
        var metrics = MetricTable()
        for metric in run.metrics.metrics { metrics[metric] = [] }
        var (spacing, confusion) = ([Double](), [Int64]())
        var labels: [String: LabelMap] = [:]
        for name in order {
            guard let (part, position) = location[name] else { continue }
            let piece = pieces[part].run
            for metric in run.metrics.metrics {
                metrics[metric]! += piece.metrics[metric]![(position * k)..<((position + 1) * k)]
            }
            spacing += piece.spacing[(position * 3)..<((position + 1) * 3)]
            confusion += piece.confusion[(position * k * k)..<((position + 1) * k * k)]
            if let map = pieces[part].labels[name] { labels[name] = map }
        }
        (run.caseIDs, run.metrics, run.spacing, run.confusion, run.labels) = (
            order, metrics, spacing, confusion,
            labels
        )
        run.created = ResultsRun.isoTimestamp(Date())
        return run
    }

    /// An `evaluate` run's recorded options as one process writing `output` records them (no shard).
    static func evaluateConfig(_ json: String, output: String) throws -> String {
        var options = try JSONDecoder().decode(EvaluateOptions.self, from: Data(json.utf8))
        (options.output, options.shard) = (output, nil)
        return try SortedJSON.string(options)
    }
}

extension ResultsRun {
    /// One run holding every case of `runs`, in their order: a cross-validation's folds pooled, each case scored by
    /// the fold that held it out.
    ///
    /// - Throws: `ResultsError.inconsistentRun` when the runs differ in classes or metrics or share a case.
    public static func pooled(_ runs: [ResultsRun], name: String) throws -> ResultsRun {
        guard let first = runs.first else {
            throw ResultsError.inconsistentRun(run: name, reason: "no run to pool")
        }
        var (order, location) = ([String](), [String: (part: Int, position: Int)]())
        for (part, run) in runs.enumerated() {
            guard run.classNames == first.classNames, run.metrics.metrics == first.metrics.metrics else {
                throw ResultsError.inconsistentRun(
                    run: name, reason: "'\(run.name)' has other classes or metrics than '\(first.name)'")
            }
            for (position, id) in run.caseIDs.enumerated() {
                guard location[id] == nil else {
                    throw ResultsError.inconsistentRun(run: name, reason: "case '\(id)' is in two runs")
                }
                (location[id], order) = ((part, position), order + [id])
            }
        }
        var run = try ResultsMerge.joined(runs.map { ($0, $0.labels) }, order: order, location: location)
        run.name = name
        return run
    }
}
