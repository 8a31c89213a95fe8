import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

@testable import SliceLabIO

/// NRRD images and 3D Slicer segmentations against `Datasets/goldens/nrrd_goldens.py` (SimpleITK 2.5.7 for
/// geometry and arrays, slicerio 1.4.0 for the segment table and label maps; pynrrd 1.1.3 wrote the made files,
/// slicerio's wheel gave the CT chest and its segmentations), and SliceLab's segmentations read back by slicerio
/// and SimpleITK.
@Suite struct NRRDFormatTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/nrrd")
    static let goldens = folder.appendingPathComponent("goldens.h5").path

    @Test(arguments: ["tilted_int16_raw", "ras_float_gzip", "detached_big", "ascii_uchar", "CTChest4"])
    func imagesMatchSimpleITK(_ name: String) throws {
        let goldens = try HDF5File.open(Self.goldens)
        let file = try #require(try goldens.attribute("file", at: "/\(name)").stringValue)
        let path = Self.folder.appendingPathComponent(file).path
        let image = try ImageFormats.format(of: path).readImage(path, limits: .standard)
        let reader = try ImageFormats.format(of: path).frames(path, limits: .standard)
        let geometry = try #require(reader.geometry)
        let spacing = try goldens.read("/\(name)/spacing", as: Double.self).values
        let origin = try goldens.read("/\(name)/origin", as: Double.self).values
        let direction = try goldens.read("/\(name)/direction", as: Double.self).values
        for (a, b) in zip(geometry.spacing + geometry.origin + geometry.direction, spacing + origin + direction) {
            #expect(abs(a - b) < 1e-9, "\(name): \(geometry) against \(spacing) \(origin) \(direction)")
        }
        #expect(image.spacing == geometry.spacing)
        let array = try goldens.read("/\(name)/array", as: Float.self)
        let stride = Int(try goldens.attribute("stride", at: "/\(name)").doubleValues?[0] ?? 1)
        #expect(array.shape == [image.frames, image.rows, image.columns].map { ($0 + stride - 1) / stride })
        var sampled: [Float] = []
        for z in Swift.stride(from: 0, to: image.frames, by: stride) {
            for y in Swift.stride(from: 0, to: image.rows, by: stride) {
                for x in Swift.stride(from: 0, to: image.columns, by: stride) {
                    sampled.append(image.values[(z * image.rows + y) * image.columns + x])
                }
            }
        }
        #expect(sampled == array.values, "\(name): voxel values differ from SimpleITK's")
        let sum = try #require(try goldens.attribute("sum", at: "/\(name)").doubleValues?[0])
        #expect(abs(image.values.reduce(0.0) { $0 + Double($1) } - sum) <= 1e-6 * max(1, abs(sum)))
    }

    @Test(arguments: ["Segmentation", "SegmentationOverlapping"])
    func slicerSegmentationsMatchSlicerio(_ name: String) throws {
        let goldens = try HDF5File.open(Self.goldens)
        let file = try #require(try goldens.attribute("file", at: "/\(name)").stringValue)
        let path = Self.folder.appendingPathComponent(file).path
        let loaded = try LoadedLabels.read(path)
        let expected = try goldens.read("/\(name)/labels", as: UInt16.self)
        #expect(expected.shape == loaded.labels.dimensions)
        #expect(loaded.labels.labels == expected.values.map(Int32.init), "\(name): labels differ from slicerio's")
        guard case .strings(let names) = try goldens.attribute("names", at: "/\(name)") else {
            Issue.record("no segment names")
            return
        }
        let header = try NRRDHeader.read(path)
        #expect(try SlicerSegment.all(in: header).map(\.name) == names)
        #expect(
            loaded.notes.first?.hasPrefix("classes one class per structure in file order: '\(names[0])' → 1") == true)
        // By class names: a set naming two of the segments gets those, and nothing else.
        let byName = try LoadedLabels.read(
            path,
            options: LabelReadingOptions(
                mapping: StructureMapping(rule: .classNames(["background", names[1], names[0]]))))
        for (mine, theirs) in zip(byName.labels.labels, loaded.labels.labels) {
            #expect(mine == (theirs == 1 ? 2 : theirs == 2 ? 1 : 0) || (mine != 0 && theirs > 2))
        }
    }

    /// Overlapping segments: the higher class wins, or `--overlap error` names both.
    @Test func overlapIsResolvedOrRefused() throws {
        let path = Self.folder.appendingPathComponent("SegmentationOverlapping.seg.nrrd").path
        let strict = LabelReadingOptions(mapping: StructureMapping(rule: .fileOrder, overlap: .error))
        #expect(throws: InputError.self) { try LoadedLabels.read(path, options: strict) }
        do {
            _ = try LoadedLabels.read(path, options: strict)
        } catch {
            #expect("\(error)".contains("overlap (--overlap error)"), "\(error)")
        }
    }

    /// What SliceLab writes, slicerio reads back as the same segments and label map, and SimpleITK with the same
    /// geometry.
    @Test func writtenSegmentationsReadBackInSlicerioAndSimpleITK() throws {
        let folder = try TestSupport.temporaryFolder("nrrd")
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = Self.folder.appendingPathComponent("Segmentation.seg.nrrd").path
        let loaded = try LoadedLabels.read(source)
        let names = try SlicerSegment.all(in: NRRDHeader.read(source)).map(\.name)
        let out = folder.appendingPathComponent("out.seg.nrrd").path
        try NRRDFormat.writeSegmentation(
            loaded.labels, geometry: try #require(loaded.geometry),
            classNames: Dictionary(uniqueKeysWithValues: names.enumerated().map { ($0 + 1, $1) }), to: out)
        let again = try LoadedLabels.read(out)
        #expect(again.labels == loaded.labels && again.geometry == loaded.geometry)
        let check = """
            import sys, json, numpy as np, slicerio, SimpleITK as sitk
            out, source = sys.argv[1], sys.argv[2]
            mine, theirs = slicerio.read_segmentation(out), slicerio.read_segmentation(source)
            assert [s['name'] for s in mine['segments']] == [s['name'] for s in theirs['segments']]
            assert np.array_equal(mine['voxels'], theirs['voxels']), 'voxels differ'
            assert np.allclose(mine['ijkToLPS'], theirs['ijkToLPS'])
            a, b = sitk.ReadImage(out), sitk.ReadImage(source)
            assert np.allclose(a.GetOrigin(), b.GetOrigin()) and np.allclose(a.GetDirection(), b.GetDirection())
            assert np.allclose(a.GetSpacing(), b.GetSpacing())
            print('ok')
            """
        #expect(try TestSupport.runPython(check, arguments: [out, source]).contains("ok"))
    }

    @Test func badHeadersAreClearErrors() throws {
        let folder = try TestSupport.temporaryFolder("nrrd-bad")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cases: [(String, String)] = [
            ("NRRD0004\ntype: block\ndimension: 3\nsizes: 1 1 1\nencoding: raw\n\n", "type 'block'"),
            ("NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2\nencoding: raw\n\n", "sizes '2 2'"),
            ("NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nencoding: bzip2\n\n", "encoding bzip2"),
            ("NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nencoding: raw\n\nabc", "3 data bytes for 8"),
            ("NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nencoding: gzip\n\nabc", "gzip data is corrupt"),
            ("NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nencoding: raw\ndata file: LIST\n", "several files"),
            (
                "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nencoding: raw\nspace: left-posterior-superior\n"
                    + "space directions: (1,0,0) (0,0,0) (0,0,1)\n\n12345678", "zero or non-finite vector"
            ),
            ("NRRD0004\ntype: uchar\ndimension: 3\nsizes: 100000 100000 100000\nencoding: raw\n\n", "refused"),
            (
                "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nencoding: raw\ndata file: /dev/zero\n",
                "/dev/zero: cannot read: the data file is missing or not a regular file"
            )
        ]
        for (index, (text, message)) in cases.enumerated() {
            let path = folder.appendingPathComponent("bad\(index).nrrd").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            do {
                _ = try ImageFormats.format(of: path).readImage(path, limits: .standard)
                Issue.record("\(message): read")
            } catch {
                #expect(
                    ("\(error)".contains(path) || message.hasPrefix("/dev")) && "\(error)".contains(message), "\(error)"
                )
            }
        }
    }
}
