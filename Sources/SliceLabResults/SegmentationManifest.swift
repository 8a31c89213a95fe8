import Foundation
import SliceLabDatasets
import SliceLabSupport

/// The manifest `segment.json` of a folder `segment` wrote from a folder of cases: the configuration, the cases
/// in order, the cases skipped as bad (`--skip-bad`) with the reason, and for a shard its index and count and every
/// case of the run.
public struct SegmentationManifest: Codable, Equatable, Sendable {
    public struct Skip: Codable, Equatable, Sendable {
        public var name: String
        public var reason: String

        public init(name: String, reason: String) {
            self.name = name
            self.reason = reason
        }
    }
    public var command = "segment"
    /// The options every shard shares: model, post-processing, probabilities, tile size, input folder.
    public var config: [String: String]
    /// The cases written (this shard's in a part), in the run's order.
    public var cases: [String]
    public var skipped: [Skip]
    /// A shard's part only: the shard, and every case of the run in order.
    public var shard: Shard?
    public var caseOrder: [String]?

    enum CodingKeys: String, CodingKey {
        case command, config, cases, skipped, shard
        case caseOrder = "case_order"
    }

    /// The manifest as stored: JSON with sorted keys, so one process and a merge write the same bytes.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return try encoder.encode(self)
    }

    /// The manifest's file name in an output folder.
    public static let fileName = "segment.json"

    /// Joins the folders the shards wrote into `output`, as one process writes it: every case file copied in the
    /// run's order, the manifest without the shard's fields, skipped cases in the run's order.
    ///
    /// - Throws: `DatasetError` (not a part, different configurations, missing or duplicate shards, an output that
    ///   exists), file errors naming the file. Nothing is written then.
    public static func merge(parts: [String], output: String, overwrite: Bool = false) throws -> SegmentationManifest {
        if FileManager.default.fileExists(atPath: output),
            !overwrite
                || parts.contains(where: {
                    URL(fileURLWithPath: $0).standardizedFileURL
                        == URL(fileURLWithPath: output).standardizedFileURL
                })
        {
            throw DatasetError.outputExists(file: output)
        }
        let manifests = try parts.map { part -> SegmentationManifest in
            let path = part + "/" + fileName
            guard let data = FileManager.default.contents(atPath: path),
                let manifest = try? JSONDecoder().decode(SegmentationManifest.self, from: data), manifest.shard != nil
            else {
                throw DatasetError.notAPart(file: part)
            }
            return manifest
        }
        let records = zip(parts, manifests).map { part, manifest in
            ShardRecord(
                command: manifest.command, shard: manifest.shard!,
                configJSON: (try? SortedJSON.string(manifest.config))
                    ?? "", caseOrder: manifest.caseOrder ?? [], cases: manifest.cases + manifest.skipped.map(\.name),
                skipped: [], runOrder: [], comparisons: [])
        }
        try ResultsMerge.checkTogether(records, parts: parts)
        let order = records[0].caseOrder
        var owner: [String: Int] = [:]
        for (index, record) in records.enumerated() {
            for name in record.cases {
                if let other = owner[name] {
                    throw DatasetError.inconsistentPart(
                        file: parts[index], reason: "case '\(name)' is also in \(parts[other])")
                }
                owner[name] = index
            }
        }
        if let absent = order.first(where: { owner[$0] == nil }) {
            throw DatasetError.inconsistentPart(file: parts[0], reason: "case '\(absent)' of the run is in no part")
        }
        let written = Set(manifests.flatMap(\.cases))
        let skips = Dictionary(manifests.flatMap(\.skipped).map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let merged = SegmentationManifest(
            config: manifests[0].config, cases: order.filter { written.contains($0) },
            skipped: order.compactMap { skips[$0] }, shard: nil, caseOrder: nil)
        try prepareOutputLocation(output, isFolder: true)
        try writeFolderAtomically(to: output) { temporary in
            for name in merged.cases {
                let source = parts[owner[name]!] + "/" + name + ".h5"
                do { try FileManager.default.copyItem(atPath: source, toPath: temporary + "/" + name + ".h5") } catch {
                    throw DatasetError.inconsistentPart(
                        file: parts[owner[name]!],
                        reason: "cannot copy \(name).h5: "
                            + error.localizedDescription)
                }
            }
            try writeAtomically(try merged.encoded(), to: temporary + "/" + fileName)
        }
        return merged
    }

    public init(config: [String: String], cases: [String], skipped: [Skip], shard: Shard?, caseOrder: [String]?) {
        self.config = config
        self.cases = cases
        self.skipped = skipped
        self.shard = shard
        self.caseOrder = caseOrder
    }
}
