import DICOM
import Foundation
import ImageFiles
import SliceLabDatasets
import TestSupport
import Testing

/// A labeled set whose labels are DICOM SEG files loads like one with PNG label maps.
@Suite struct LabeledSetSegmentationTests {
    @Test func segLabelsLoadAsTheLabelMapTheyEncode() throws {
        let demo = TestSupport.packageRoot.appendingPathComponent("Sources/SliceLabKit/Resources/Demo/mni-brain")
        let folder = try TestSupport.temporaryFolder("seg-set")
        let set = folder.appendingPathComponent("set")
        for sub in ["images", "labels", "source"] {
            try FileManager.default.createDirectory(
                at: set.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let image = demo.appendingPathComponent("images/axial075.dcm")
        try FileManager.default.copyItem(at: image, to: set.appendingPathComponent("images/axial075.dcm"))
        try FileManager.default.copyItem(at: image, to: set.appendingPathComponent("source/axial075.dcm"))
        let png = try PNGImage.read(demo.appendingPathComponent("labels/axial075.png").path)
        let labels = png.intSamples.map { Int32($0) }
        let series = try #require(try Series.scan(set.appendingPathComponent("source").path).series.first)
        try Segmentation.write(
            labels: labels, series: series, segmentLabels: [1: "gray matter", 2: "white matter"],
            to: set.appendingPathComponent("labels/axial075.dcm").path)
        try FileManager.default.removeItem(at: set.appendingPathComponent("source"))
        let json =
            #"{"name": "seg", "modality": "MR", "classes": ["background", "gray matter", "white matter"], "splits": {"test": ["axial075"]}}"#
        try Data(json.utf8).write(to: set.appendingPathComponent("dataset.json"))

        let sample = try LabeledSet.open(set.path).load("axial075")
        #expect(sample.labels.values == labels)
        #expect(sample.image.shape == [1, 1, png.rows, png.columns])
        #expect(sample.spacing == [1, 1, 1] || sample.spacing[1...] == [1, 1])
    }
}
