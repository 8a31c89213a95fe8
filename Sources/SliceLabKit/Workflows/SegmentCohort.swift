import DeepLab
import Foundation
import SliceLabDatasets
import SliceLabIO
import SliceLabResults
import SliceLabSupport

/// `slicelab segment FOLDER --model MODEL.h5 --out OUT/`: every case of a folder segmented into a folder, and
/// the same in shards (`--shard I/N`) that `slicelab merge` joins into the folder one process writes.
///
/// The cases are the folder's entries as SliceLab lists them: every file of a format it reads (the case is its
/// name without the ending) and every sub-folder (a DICOM series), sorted by name. Case `c` becomes
/// `OUT/c.h5` exactly as `segment c --out OUT/c.h5` writes it, and `OUT/segment.json` records the run: the
/// configuration, the cases in order, the cases skipped as bad (`--skip-bad`) with the reason, and for a shard
/// its index and count and every case of the run. The folder is written as a whole (`writeFolderAtomically`).
public enum SegmentCohort {
    /// The manifest `segment.json` of an output folder.
    public struct Manifest: Codable, Equatable, Sendable {
        public struct Skip: Codable, Equatable, Sendable {
            public var name: String
            public var reason: String
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
        func encoded() throws -> Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            return try encoder.encode(self)
        }
    }

    public static let manifestName = "segment.json"

    /// The cases of `folder`: (name, path), sorted by name.
    ///
    /// - Throws: `InputError.unsupportedFile` for a folder that cannot be listed or holds no case.
    public static func cases(in folder: String) throws -> [(name: String, path: String)] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder) } catch {
            throw InputError.unsupportedFile(file: folder, reason: "cannot list the folder of cases")
        }
        var found: [(name: String, path: String)] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            let url = URL(fileURLWithPath: folder).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                found.append((name, url.path))
            } else if ImageFormats.isInput(url) {
                found.append((ImageFormats.stem(name), url.path))
            }
        }
        guard !found.isEmpty else {
            throw InputError.unsupportedFile(
                file: folder,
                reason: "no case in the folder (files SliceLab reads, or "
                    + "series sub-folders)")
        }
        if let duplicate = Dictionary(grouping: found, by: \.name).first(where: { $0.value.count > 1 }) {
            throw InputError.unsupportedFile(
                file: folder,
                reason: "two cases named '\(duplicate.key)': "
                    + duplicate.value.map { URL(fileURLWithPath: $0.path).lastPathComponent }.joined(separator: ", "))
        }
        return found
    }

    /// Segments the cases of `options.input` (this shard's with `shard`) into the folder `options.output`.
    ///
    /// - Parameters:
    ///   - skipBad: a case that fails is recorded as skipped (reason in the manifest) instead of failing the run.
    /// - Returns: the manifest written.
    /// - Throws: `InputError`, `ShardError`, and a failing case's error (naming it) without `skipBad`; nothing is
    ///   written then.
    public static func run(
        _ options: Segment.Options, shard: Shard? = nil, skipBad: Bool = false,
        log: (String) -> Void = { _ in }
    ) throws -> Manifest {
        if options.overlay != nil {
            throw InputError.unsupportedOutput(
                file: options.output,
                reason: "--overlay takes one image; a folder "
                    + "of cases has none")
        }
        let all = try cases(in: options.input)
        var chosen = all
        if let shard {
            chosen = try ShardSplit.indices(of: shard, sizes: all.map { ShardSplit.diskSize($0.path) }).map { all[$0] }
        }
        _ = try DeepLabCheckpoint.load(options.model)  // a bad model fails the run, not every case
        var config = [
            "input": options.input, "model": options.model, "regularize": options.postProcessing.step.rawValue,
            "probabilities": options.probabilities ? "true" : "false", "tile_size": "\(options.tileSize)"
        ]
        if options.postProcessing.step == .crf { config["crf"] = options.postProcessing.crf.spec }
        var manifest = Manifest(
            config: config, cases: [], skipped: [], shard: shard,
            caseOrder: shard == nil ? nil : all.map(\.name))
        try prepareOutputLocation(options.output, isFolder: true)
        try writeFolderAtomically(to: options.output) { temporary in
            for (index, item) in chosen.enumerated() {
                var single = options
                (single.input, single.output) = (item.path, temporary + "/" + item.name + ".h5")
                do {
                    try Segment.run(single, log: log)
                    manifest.cases.append(item.name)
                } catch {
                    guard skipBad else { throw SegmentCohortError.failedCase(name: item.name, cause: "\(error)") }
                    manifest.skipped.append(.init(name: item.name, reason: "\(error)"))
                    log("segment: skipped \(item.name): \(error)")
                }
                log("segment: case \(index + 1)/\(chosen.count) \(item.name)")
            }
            try writeAtomically(try manifest.encoded(), to: temporary + "/" + manifestName)
        }
        return manifest
    }

    /// Joins the folders the shards wrote into `output`, as one process writes it: every case file copied in the
    /// run's order, the manifest without the shard's fields, skipped cases in the run's order.
    ///
    /// - Throws: `ShardError` (not a part, different configurations, missing or duplicate shards, an output that
    ///   exists), file errors naming the file. Nothing is written then.
    public static func merge(parts: [String], output: String, overwrite: Bool = false) throws -> Manifest {
        if FileManager.default.fileExists(atPath: output),
            !overwrite
                || parts.contains(where: {
                    URL(fileURLWithPath: $0).standardizedFileURL
                        == URL(fileURLWithPath: output).standardizedFileURL
                })
        {
            throw ShardError.outputExists(file: output)
        }
        let manifests = try parts.map { part -> Manifest in
            let path = part + "/" + manifestName
            guard let data = FileManager.default.contents(atPath: path),
                let manifest = try? JSONDecoder().decode(Manifest.self, from: data), manifest.shard != nil
            else {
                throw ShardError.notAPart(file: part)
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
                    throw ShardError.inconsistentPart(
                        file: parts[index], reason: "case '\(name)' is also in \(parts[other])")
                }
                owner[name] = index
            }
        }
        if let absent = order.first(where: { owner[$0] == nil }) {
            throw ShardError.inconsistentPart(file: parts[0], reason: "case '\(absent)' of the run is in no part")
        }
        let written = Set(manifests.flatMap(\.cases))
        let skips = Dictionary(manifests.flatMap(\.skipped).map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let merged = Manifest(
            config: manifests[0].config, cases: order.filter { written.contains($0) },
            skipped: order.compactMap { skips[$0] }, shard: nil, caseOrder: nil)
        try prepareOutputLocation(output, isFolder: true)
        try writeFolderAtomically(to: output) { temporary in
            for name in merged.cases {
                let source = parts[owner[name]!] + "/" + name + ".h5"
                do { try FileManager.default.copyItem(atPath: source, toPath: temporary + "/" + name + ".h5") } catch {
                    throw ShardError.inconsistentPart(
                        file: parts[owner[name]!],
                        reason: "cannot copy \(name).h5: "
                            + error.localizedDescription)
                }
            }
            try writeAtomically(try merged.encoded(), to: temporary + "/" + manifestName)
        }
        return merged
    }
}

/// A case of a folder of cases that failed (without `--skip-bad`).
public enum SegmentCohortError: Error, CustomStringConvertible, Equatable {
    case failedCase(name: String, cause: String)

    public var description: String {
        switch self {
        case .failedCase(let name, let cause): return "case '\(name)': \(cause) (pass --skip-bad to skip it and go on)"
        }
    }
}
