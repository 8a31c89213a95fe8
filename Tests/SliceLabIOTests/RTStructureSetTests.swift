import DICOM
import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

@testable import SliceLabIO

/// RT Structure Sets read as label maps, against `Datasets/goldens/rtstruct_goldens.py`: plastimatch 1.10.0
/// (`convert --referenced-ct --xor-contours`) on a tilted series, the same referencing slices by position only,
/// an axis-aligned one (where rt-utils 1.2.7 reads too) and dicompyler-core's example structure set; masks known
/// by construction where they are.
@Suite struct RTStructureSetTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/rtstruct")
    static let goldens = folder.appendingPathComponent("goldens.h5").path

    static func dice(_ a: [Bool], _ b: [Bool]) -> Double {
        let both = zip(a, b).filter { $0 && $1 }.count
        let total = a.filter { $0 }.count + b.filter { $0 }.count
        return total == 0 ? 1 : 2 * Double(both) / Double(total)
    }

    @Test(arguments: ["made", "position_only", "aligned", "dicompyler"])
    func everyROIMatchesPlastimatch(_ name: String) throws {
        let path = Self.folder.appendingPathComponent("\(name)/RS.dcm").path
        let format = try ImageFormats.format(of: path)
        #expect(format is RTStructureSetFormat)
        let loaded = try LoadedLabels.read(path)
        let set = try StructureSet(path: path)
        let grid = try ContourGrid(series: RTStructureSetFormat.series(of: set, reference: nil, limits: .standard))
        let goldens = try HDF5File.open(Self.goldens)
        for (index, roi) in set.rois.enumerated() {
            let mine = try set.mask(roi, on: grid).mask.map { $0 != 0 }
            // In the label map the ROI's class is where its mask is and no later ROI's.
            let later = loaded.labels.labels.map { $0 > Int32(index + 1) }
            #expect(zip(zip(mine, later), loaded.labels.labels).allSatisfy { $0.1 || ($1 == Int32(index + 1)) == $0.0 })
            let group = "/\(name)/\(roi.name)"
            guard goldens.exists(group + "/plastimatch") else {
                // plastimatch writes no mask for an ROI without closed contours (Marker, Line).
                #expect(!roi.contours.contains { $0.geometricType == "CLOSED_PLANAR" }, "\(name): \(roi.name)")
                #expect(!mine.contains(true))
                continue
            }
            let theirs = try goldens.read(group + "/plastimatch", as: UInt8.self)
            #expect(theirs.shape == loaded.labels.dimensions)
            let dice = Self.dice(mine, theirs.values.map { $0 != 0 })
            #expect(dice >= 0.99, "\(name) \(roi.name): Dice \(dice) against plastimatch")
            if goldens.exists(group + "/exact") {
                let exact = try goldens.read(group + "/exact", as: UInt8.self).values.map { $0 != 0 }
                let wrong = zip(mine, exact).filter { $0 != $1 }.count
                #expect(wrong == 0, "\(name) \(roi.name): \(wrong) voxel(s) differ from the known mask")
            }
            if goldens.exists(group + "/rtutils"), roi.name != "Ring" {
                // rt-utils fills polygon boundaries too: every voxel whose centre is inside is in its mask.
                let rtutils = try goldens.read(group + "/rtutils", as: UInt8.self).values
                let outside = zip(mine, rtutils).filter { $0 && $1 == 0 }.count
                #expect(outside == 0, "\(name) \(roi.name): \(outside) voxel(s) outside rt-utils' mask")
            }
        }
    }

    @Test func notesAndMappingAndOverlap() throws {
        let path = Self.folder.appendingPathComponent("made/RS.dcm").path
        let loaded = try LoadedLabels.read(path)
        #expect(loaded.notes.contains { $0.contains("ROI 'Marker': 1 POINT contour(s) left out") }, "\(loaded.notes)")
        #expect(loaded.notes.contains { $0.contains("ROI 'Line': 1 OPEN_PLANAR contour(s) left out") })
        #expect(loaded.classNames[2] == "Ring" && loaded.geometry != nil)
        let mapped = try LoadedLabels.read(
            path, options: LabelReadingOptions(mapping: try StructureMapping(parsing: "ring=1,Sq*|Disc=2")))
        #expect(Set(mapped.labels.labels) == [0, 1, 2])
        #expect(mapped.notes[0].contains("'Ring' → 1") && mapped.notes[0].contains("left out: 'Marker', 'Line'"))
        let strict = LabelReadingOptions(mapping: StructureMapping(rule: .fileOrder, overlap: .error))
        do {
            _ = try LoadedLabels.read(path, options: strict)
            Issue.record("Disc overlaps Square and Ring")
        } catch {
            #expect("\(error)".contains(path) && "\(error)".contains("overlaps ROI"), "\(error)")
        }
    }

    /// The referenced series: found beside the set, given explicitly, or missing with a clear line.
    @Test func referencedSeriesIsFoundOrNamed() throws {
        let folder = try TestSupport.temporaryFolder("rtstruct")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("rs"), withIntermediateDirectories: true)
        let rs = folder.appendingPathComponent("rs/RS.dcm")
        try FileManager.default.copyItem(at: Self.folder.appendingPathComponent("made/RS.dcm"), to: rs)
        do {
            _ = try LoadedLabels.read(rs.path)
            Issue.record("no series beside it")
        } catch {
            #expect("\(error)".contains("its referenced series") && "\(error)".contains("--ref-series"), "\(error)")
        }
        // A study folder: the series folder beside the structure set's is found.
        try FileManager.default.copyItem(
            at: Self.folder.appendingPathComponent("made/ct"), to: folder.appendingPathComponent("ct"))
        #expect(try LoadedLabels.read(rs.path).labels.labels.contains(3))
        try FileManager.default.removeItem(at: folder.appendingPathComponent("ct"))
        let given = try LoadedLabels.read(
            rs.path, options: LabelReadingOptions(reference: Self.folder.appendingPathComponent("made/ct").path))
        #expect(given.labels == (try LoadedLabels.read(Self.folder.appendingPathComponent("made/RS.dcm").path)).labels)
        do {
            _ = try LoadedLabels.read(
                rs.path,
                options: LabelReadingOptions(reference: Self.folder.appendingPathComponent("dicompyler/ct").path))
            Issue.record("another frame of reference")
        } catch {
            #expect("\(error)".contains("Frame of Reference"), "\(error)")
        }
    }
}
