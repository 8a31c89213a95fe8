import Foundation
import ImageFiles
import SliceLabDatasets
import SliceLabIO

/// The `/shard` record of a shard's part and the label maps of a run, which `slicelab merge` carries over.
extension ResultsFile {
    /// Writes `record` as the `/shard` group: attributes `command`, `index`, `count`, `config`, and string
    /// datasets `case_order`, `cases`, `skipped_cases`, `skipped_reasons`, `run_order`, `comparison_a`, `comparison_b`.
    static func write(_ record: ShardRecord, to file: HDF5File) throws {
        try file.createGroup("/shard")
        try file.setAttribute("command", .string(record.command), at: "/shard")
        try file.setAttribute("index", .int(Int64(record.shard.index)), at: "/shard")
        try file.setAttribute("count", .int(Int64(record.shard.count)), at: "/shard")
        try file.setAttribute("config", .string(record.configJSON), at: "/shard")
        try file.writeStrings(record.caseOrder, to: "/shard/case_order")
        try file.writeStrings(record.cases, to: "/shard/cases")
        try file.writeStrings(record.skipped.map(\.name), to: "/shard/skipped_cases")
        try file.writeStrings(record.skipped.map(\.reason), to: "/shard/skipped_reasons")
        try file.writeStrings(record.runOrder, to: "/shard/run_order")
        try file.writeStrings(record.comparisons.map(\.a), to: "/shard/comparison_a")
        try file.writeStrings(record.comparisons.map(\.b), to: "/shard/comparison_b")
    }

    /// The `/shard` record of a part, or nil for a file written without `--shard`.
    ///
    /// - Throws: `DatasetError.inconsistentPart` for a record that is not well formed, `ImageFileError`.
    public static func readShard(from path: String) throws -> ShardRecord? {
        let file = try HDF5File.open(path)
        guard file.exists("/shard") else { return nil }
        func integer(_ name: String) throws -> Int {
            guard case .int(let value)? = try? file.attribute(name, at: "/shard") else {
                throw DatasetError.inconsistentPart(file: path, reason: "/shard has no integer attribute '\(name)'")
            }
            return Int(value)
        }
        let shard: Shard
        do { shard = try Shard(index: try integer("index"), count: try integer("count")) } catch let error
            as DatasetError
        {
            throw DatasetError.inconsistentPart(file: path, reason: "\(error)")
        }
        let names = try file.readStrings("/shard/skipped_cases")
        let reasons = try file.readStrings("/shard/skipped_reasons")
        guard names.count == reasons.count else {
            throw DatasetError.inconsistentPart(
                file: path,
                reason: "/shard lists \(names.count) skipped cases and "
                    + "\(reasons.count) reasons")
        }
        let (runsA, runsB) = (try file.readStrings("/shard/comparison_a"), try file.readStrings("/shard/comparison_b"))
        guard runsA.count == runsB.count else {
            throw DatasetError.inconsistentPart(
                file: path, reason: "/shard comparison_a and comparison_b differ in length")
        }
        return ShardRecord(
            command: try file.attribute("command", at: "/shard").stringValue ?? "", shard: shard,
            configJSON: try file.attribute("config", at: "/shard").stringValue ?? "",
            caseOrder: try file.readStrings("/shard/case_order"),
            cases: try file.readStrings("/shard/cases"),
            skipped: zip(names, reasons).map { (name: $0, reason: $1) },
            runOrder: try file.readStrings("/shard/run_order"),
            comparisons: zip(runsA, runsB).map { (a: $0, b: $1) })
    }

    /// The stored label maps of a run (`labels/<case>` with its `spacing`), by case; empty when none.
    ///
    /// - Throws: `ImageFileError` naming the file.
    static func readLabels(_ run: String, from path: String) throws -> [String: LabelMap] {
        let file = try HDF5File.open(path)
        let group = "/runs/\(run)/labels"
        guard file.exists(group) else { return [:] }
        var maps: [String: LabelMap] = [:]
        for caseID in try file.children(of: group) {
            let stored = try file.read("\(group)/\(caseID)", as: Int64.self)
            let shape = stored.shape.count == 2 ? [1] + stored.shape : stored.shape
            guard shape.count == 3 else {
                throw DatasetError.inconsistentPart(file: path, reason: "\(group)/\(caseID) has shape \(stored.shape)")
            }
            let spacing =
                file.hasAttribute("spacing", at: "\(group)/\(caseID)")
                ? try file.attribute("spacing", at: "\(group)/\(caseID)").doubleValues ?? [1, 1, 1] : [1, 1, 1]
            maps[caseID] = LabelMap(
                frames: shape[0], rows: shape[1], columns: shape[2],
                labels: stored.values.map { Int32(clamping: $0) }, spacing: spacing)
        }
        return maps
    }
}
