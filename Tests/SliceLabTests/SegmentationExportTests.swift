import DICOM
import DeepLab
import Foundation
import ImageFiles
import SliceLabIO
import SliceLabKit
import TestSupport
import Testing

/// `slicelab segment SERIES --out OUT.dcm` and `slicelab convert LABELS --reference SERIES OUT.dcm`: the label map
/// as a binary DICOM SEG over the source series, read back by SliceLab and by pydicom 3.
@Suite(.serialized) struct SegmentationExportTests {
    static let seriesUID = "1.2.826.0.1.3680043.8.498.2026113001"

    /// Two single-frame MR slices (233 × 197) of the bundled mni-brain set, made one series with dcmodify.
    static func makeSeries(in folder: URL) throws -> URL {
        let demo = TestSupport.packageRoot.appendingPathComponent("Sources/SliceLabKit/Resources/Demo/mni-brain/images")
        let series = folder.appendingPathComponent("series")
        try FileManager.default.createDirectory(at: series, withIntermediateDirectories: true)
        // Copied in reverse name order so the slice order comes from the positions, not the names.
        for (index, name) in ["axial035", "axial025"].enumerated() {
            let copy = series.appendingPathComponent("slice\(index).dcm")
            try FileManager.default.copyItem(at: demo.appendingPathComponent("\(name).dcm"), to: copy)
            let result = try TestSupport.run(
                "/usr/bin/dcmodify",
                [
                    "-nb", "-m", "(0020,000e)=\(seriesUID)", "-m", "(0008,0018)=\(seriesUID).\(index + 1)",
                    "-m", "(0020,0013)=\(index + 1)", copy.path
                ])
            #expect(result.status == 0, "dcmodify: \(result.standardError)")
        }
        return series
    }

    static func smallModel(at path: String, classNames: [String]?) throws -> DeepLabV3 {
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .mobilenetV2, classCount: 3, inputChannels: 1,
                outputStride: 16, atrousRates: [2, 4], asppChannels: 8,
                widthMultiplier: 0.35, seed: 7))
        try DeepLabCheckpoint.save(model, preprocessing: .minMax, to: path) { file in
            if let classNames { try file.setAttribute("class_names", .strings(classNames)) }
        }
        return model
    }

    /// What pydicom 3 sees in a SEG: SOP class, referenced series and instances, and per frame the referenced
    /// SOP instance, the segment number and the number of pixels set.
    static let pydicomCheck = """
        import json, sys, pydicom
        ds = pydicom.dcmread(sys.argv[1])
        frames = ds.pixel_array.reshape(int(ds.NumberOfFrames), ds.Rows, ds.Columns)
        print(json.dumps({
            "sop_class": str(ds.SOPClassUID),
            "series": [str(item.SeriesInstanceUID) for item in ds.ReferencedSeriesSequence],
            "instances": sorted(str(i.ReferencedSOPInstanceUID) for item in ds.ReferencedSeriesSequence
                                for i in item.ReferencedInstanceSequence),
            "segments": [str(s.SegmentLabel) for s in ds.SegmentSequence],
            "frames": [[str(f.DerivationImageSequence[0].SourceImageSequence[0].ReferencedSOPInstanceUID),
                        int(f.SegmentIdentificationSequence[0].ReferencedSegmentNumber), int(frames[k].sum())]
                       for k, f in enumerate(ds.PerFrameFunctionalGroupsSequence)],
        }))
        """

    struct PydicomView: Decodable {
        let sop_class: String
        let series: [String]
        let instances: [String]
        let segments: [String]
        let frames: [[JSONValue]]
    }

    enum JSONValue: Decodable, Equatable {
        case text(String)
        case number(Int)
        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int.self) {
                self = .number(number)
            } else {
                self = .text(try container.decode(String.self))
            }
        }
    }

    static func pydicomView(_ path: String) throws -> PydicomView {
        let output = try TestSupport.runPython(pydicomCheck, arguments: [path])
        return try JSONDecoder().decode(PydicomView.self, from: Data(output.utf8))
    }

    @Test func segmentWritesADicomSegOverTheSourceSeriesThatPydicomReads() throws {
        let folder = try TestSupport.temporaryFolder("segment-seg")
        defer { try? FileManager.default.removeItem(at: folder) }
        let seriesFolder = try Self.makeSeries(in: folder)
        let modelPath = folder.appendingPathComponent("model.h5").path
        let model = try Self.smallModel(at: modelPath, classNames: ["background", "gray matter", "white matter"])
        let out = folder.appendingPathComponent("labels.dcm").path
        let result = try TestSupport.slicelab(["segment", seriesFolder.path, "--model", modelPath, "--out", out])
        #expect(result.status == 0, "\(result.standardError)")

        // The labels the model gives the series, slice by slice in the series' order.
        let image = try ImageLoader.load(seriesFolder.path)
        let expected = try SegmentWorkflow.labels(model: model, preprocessing: .minMax, image: image)
        let present = Set(expected.filter { $0 > 0 }).sorted()
        try #require(!present.isEmpty, "the test model labels no pixel above background")

        let series = try #require(try Series.scan(seriesFolder.path).series.first)
        #expect(series.slices.map { $0.file.imagePosition()?[2] } == [-47, -37])
        let seg = try Segmentation(path: out)
        #expect(seg.kind == .binary)
        let back = try seg.labels(alignedTo: series)
        #expect(back.count == expected.count && zip(back, expected).filter { $0 != $1 }.isEmpty)
        // Segment N is class N (both foreground classes declared, whichever occur), named from the checkpoint.
        #expect(
            seg.segments == [
                Segmentation.Segment(number: 1, label: "gray matter"),
                Segmentation.Segment(number: 2, label: "white matter")
            ])

        let peer = try Self.pydicomView(out)
        #expect(peer.sop_class == "1.2.840.10008.5.1.4.1.1.66.4")
        #expect(peer.series == [Self.seriesUID])
        #expect(peer.instances == ["\(Self.seriesUID).1", "\(Self.seriesUID).2"])
        #expect(peer.segments == seg.segments.map(\.label))
        // pydicom's frames: each references the slice it lies on and holds that slice's pixels of its segment.
        let plane = image.rows * image.columns
        var expectedFrames: [[JSONValue]] = []
        for value in present {
            for (index, slice) in series.slices.enumerated() {
                let count = expected[(index * plane)..<((index + 1) * plane)].filter { $0 == value }.count
                guard count > 0, let uid = slice.file.dataset.string(.sopInstanceUID) else { continue }
                expectedFrames.append([.text(uid), .number(Int(value)), .number(count)])
            }
        }
        #expect(peer.frames == expectedFrames)
    }

    @Test func convertWritesALabelFileAsASegOverTheReferencedSeries() throws {
        let folder = try TestSupport.temporaryFolder("convert-seg")
        defer { try? FileManager.default.removeItem(at: folder) }
        let seriesFolder = try Self.makeSeries(in: folder)
        let series = try #require(try Series.scan(seriesFolder.path).series.first)
        let (rows, columns) = (233, 197)
        var labels = [Int32](repeating: 0, count: 2 * rows * columns)
        for pixel in 0..<(rows * columns)
        where (pixel / columns - 100) * (pixel / columns - 100)
            + (pixel % columns - 90) * (pixel % columns - 90) < 900
        {
            labels[pixel] = 1
            labels[rows * columns + pixel] = pixel % columns < 90 ? 3 : 1
        }
        let labelPath = folder.appendingPathComponent("labels.h5").path
        try LabelMap(frames: 2, rows: rows, columns: columns, labels: labels).write(to: labelPath)
        let out = folder.appendingPathComponent("labels.dcm").path
        let result = try TestSupport.slicelab(["convert", labelPath, "--reference", seriesFolder.path, out])
        #expect(result.status == 0, "\(result.standardError)")
        let seg = try Segmentation(path: out)
        #expect(seg.segments.map(\.label) == ["class 1", "class 2", "class 3"])
        // Compared by count of differing labels: a failing #expect on whole arrays prints 90 000 values.
        let back = try seg.labels(alignedTo: series)
        #expect(back.count == labels.count && zip(back, labels).filter { $0 != $1 }.isEmpty)
        let peer = try Self.pydicomView(out)
        #expect(peer.series == [Self.seriesUID])

        // A label map of another size is refused, naming the output, and nothing is written.
        let wrong = folder.appendingPathComponent("wrong.h5").path
        try LabelMap(frames: 1, rows: rows, columns: columns, labels: Array(labels[0..<(rows * columns)]))
            .write(to: wrong)
        let refused = folder.appendingPathComponent("refused.dcm").path
        let failure = try TestSupport.slicelab(["convert", wrong, "--reference", seriesFolder.path, refused])
        #expect(failure.status == 1)
        #expect(failure.standardError.contains("\(refused): the label map is 1×233×197 but the series"))
        #expect(!FileManager.default.fileExists(atPath: refused))
    }
}
