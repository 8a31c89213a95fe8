import DICOM
import Foundation
import SliceLabSupport

/// DICOM RT Structure Sets (RTSTRUCT) as label maps: each ROI's closed planar contours rasterised onto the image
/// series the set references (`StructureSet.mask`: pixel centres, even-odd rule, holes by exclusive or), ROIs
/// mapped to classes by `LabelReadingOptions.mapping`. Recognised by the RT Structure Set Storage SOP class in
/// the file's first bytes; a structure set holds no image.
///
/// The series is `LabelReadingOptions.reference` when given (its series whose UID the set references, else its
/// only series), else the referenced series found in the structure set's folder, else in a folder beside it (a
/// study folder's series folders, as TCIA and PACS exports lay them out).
public struct RTStructureSetFormat: ImageFormat {
    public init() {}

    public var name: String { "DICOM RT Structure Set (labels, on its referenced series)" }
    public var fileExtensions: [String] { [] }

    public func recognizes(_ head: [UInt8]) -> Bool {
        guard DICOMFormat().recognizes(head) else { return false }
        let uid = Array(StructureSet.sopClassUID.utf8)
        return head.count >= uid.count
            && (0...(head.count - uid.count)).contains { Array(head[$0..<$0 + uid.count]) == uid }
    }

    public func readImage(_ path: String, limits: ReadLimits) throws -> ScanImage {
        throw InputError.unsupportedFile(
            file: path, reason: "an RT Structure Set holds contours, not an image; read it as labels")
    }

    public func frames(_ path: String, limits: ReadLimits) throws -> FrameReader {
        _ = try readImage(path, limits: limits)
        preconditionFailure("readImage throws")
    }

    public func readLabels(_ path: String, limits: ReadLimits, options: LabelReadingOptions) throws -> LoadedLabels {
        let set = try StructureSet(path: path, limits: limits)
        let series = try Self.series(of: set, reference: options.reference, limits: limits)
        let grid = try ContourGrid(series: series)
        let plane = grid.rows * grid.columns
        var labels = [Int32](repeating: 0, count: grid.slices * plane)
        var classNames: [Int: String] = [:]
        var notes = [options.mapping.summary(set.rois.map(\.name))]
        for (index, roi) in set.rois.enumerated() {
            guard let label = options.mapping.label(name: roi.name, index: index) else { continue }
            let result = try set.mask(roi, on: grid)
            for (type, count) in result.ignored.sorted(by: { $0.key < $1.key }) {
                notes.append("ROI '\(roi.name)': \(count) \(type) contour(s) left out (only CLOSED_PLANAR is filled)")
            }
            if !roi.contours.contains(where: { $0.geometricType == "CLOSED_PLANAR" }) {
                notes.append("ROI '\(roi.name)' has no closed planar contour: class \(label) gets no voxel from it")
            }
            let claim = Int32(label)
            for voxel in labels.indices where result.mask[voxel] != 0 {
                let current = labels[voxel]
                if current != 0 && current != claim && options.mapping.overlap == .error {
                    throw DICOMError.invalidStructureSet(
                        file: path, roi: roi.name,
                        reason: "it overlaps ROI '\(classNames[Int(current)] ?? "?")' (--overlap error); without it "
                            + "the higher class wins")
                }
                labels[voxel] = max(current, claim)
            }
            classNames[label] = classNames[label] ?? roi.name
        }
        let geometry = series.geometry
        var loaded = LoadedLabels(
            labels: LabelMap(
                frames: grid.slices, rows: grid.rows, columns: grid.columns, labels: labels, spacing: geometry.spacing),
            hasSpacing: true, geometry: geometry, notes: notes)
        loaded.classNames = classNames
        return loaded
    }

    /// The series `set` lies on (see the type's comment).
    ///
    /// - Throws: `DICOMError.invalidStructureSet` when no such series is found, naming where it was looked for.
    static func series(of set: StructureSet, reference: String?, limits: ReadLimits) throws -> Series {
        let folder = URL(fileURLWithPath: set.path).deletingLastPathComponent()
        let parent = folder.deletingLastPathComponent()
        let siblings = ((try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? []).sorted()
            .map { parent.appendingPathComponent($0) }
            .filter {
                $0.path != folder.path && (try? $0.resourceValues(forKeys: [.isDirectoryKey]))?.isDirectory == true
            }
        let places = reference.map { [$0] } ?? [folder.path] + siblings.map(\.path)
        let referenced = Set(set.referencedImages)
        for place in places {
            guard let scan = try? Series.scan(place, limits: limits) else { continue }
            if let match = scan.series.first(where: { $0.seriesInstanceUID == set.referencedSeriesUID }) {
                return match
            }
            if !referenced.isEmpty,
                let match = scan.series.first(where: { series in
                    series.slices.contains { referenced.contains($0.file.dataset.string(.sopInstanceUID) ?? "") }
                })
            {
                return match
            }
            // Given explicitly: its series in the set's Frame of Reference (slices then match by position).
            if reference != nil {
                let sameFrame = scan.series.filter {
                    set.frameOfReferenceUID.isEmpty
                        || $0.first.dataset.string(.frameOfReferenceUID) == set.frameOfReferenceUID
                }
                if sameFrame.count == 1 { return sameFrame[0] }
                if scan.series.count == 1 {
                    throw DICOMError.invalidStructureSet(
                        file: set.path, roi: nil,
                        reason: "its Frame of Reference \(set.frameOfReferenceUID) is not that of series "
                            + "\(scan.series[0].seriesInstanceUID) in \(place)")
                }
            }
        }
        throw DICOMError.invalidStructureSet(
            file: set.path, roi: nil,
            reason: "its referenced series \(set.referencedSeriesUID ?? "(none named)") is not in "
                + (reference ?? "\(folder.path) or the folders beside it")
                + (reference == nil ? " (give the series with --ref-series or --reference)" : ""))
    }
}
