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
extension SegmentWorkflow {
    /// Segments the cases of `options.input` (this shard's with `shard`) into the folder `options.output`.
    ///
    /// - Parameters:
    ///   - skipBad: a case that fails is recorded as skipped (reason in the manifest) instead of failing the run.
    /// - Returns: the manifest written.
    /// - Throws: `InputError`, `DatasetError`, and a failing case's error (naming it) without `skipBad`; nothing is
    ///   written then.
    public static func runCohort(
        _ options: Options, shard: Shard? = nil, skipBad: Bool = false,
        log: (String) -> Void = { _ in }
    ) throws -> SegmentationManifest {
        if options.overlay != nil {
            throw InputError.unsupportedOutput(
                file: options.output,
                reason: "--overlay takes one image; a folder "
                    + "of cases has none")
        }
        let all = try CaseFolder.cases(in: options.input)
        var chosen = all
        if let shard {
            chosen = try ShardSplit.indices(of: shard, sizes: all.map { ShardSplit.diskSize($0.path) }).map { all[$0] }
        }
        _ = try DeepLabCheckpoint.load(options.model)  // a bad model fails the run, not every case
        var config = [
            "input": options.input, "model": options.model, "regularize": options.postProcessing.summary,
            "probabilities": options.probabilities ? "true" : "false",
            "tile_size": options.tileSize.map(String.init) ?? "whole",
            "tile_step": "\(options.tileStep)"
        ]
        if options.postProcessing.pipeline.contains(.crf) { config["crf"] = options.postProcessing.crf.spec }
        var manifest = SegmentationManifest(
            config: config, cases: [], skipped: [], shard: shard,
            caseOrder: shard == nil ? nil : all.map(\.name))
        try prepareOutputLocation(options.output, isFolder: true)
        try writeFolderAtomically(to: options.output) { temporary in
            for (index, item) in chosen.enumerated() {
                var single = options
                (single.input, single.output) = (item.path, temporary + "/" + item.name + ".h5")
                do {
                    try run(single, log: log)
                    manifest.cases.append(item.name)
                } catch {
                    guard skipBad else { throw SegmentCohortError.failedCase(name: item.name, cause: "\(error)") }
                    manifest.skipped.append(.init(name: item.name, reason: "\(error)"))
                    log("segment: skipped \(item.name): \(error)")
                }
                log("segment: case \(index + 1)/\(chosen.count) \(item.name)")
            }
            try writeAtomically(try manifest.encoded(), to: temporary + "/" + SegmentationManifest.fileName)
        }
        return manifest
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
