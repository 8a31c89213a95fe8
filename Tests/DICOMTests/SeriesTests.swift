import DICOM
import DICOMTestSupport
import Foundation
import TestSupport
import Testing

/// Folder loading: grouping by SeriesInstanceUID, sorting on the slice normal, spacing, warnings, skipped files.
struct SeriesTests {
    let folder: URL

    init() throws { folder = try TestSupport.temporaryFolder("dicom-series") }

    /// Slice `k` holds stored values k * 100 + pixel index.
    private func writeSeries(
        positions: [[Double]], orientation: [Double] = [1, 0, 0, 0, 1, 0],
        series: String = "1.2.3.4.5", subfolder: String = "a"
    ) throws {
        let directory = folder.appendingPathComponent(subfolder)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (k, position) in positions.enumerated() {
            let stored = (0..<20).map { Int16(k * 100 + $0) }
            // Written in reverse instance order, under names that do not sort like the slices.
            try TestDICOMWriter.ctSlice(
                stored: stored, position: position, orientation: orientation, slope: 0.5,
                intercept: -1024, series: series, instance: positions.count - k
            )
            .write(to: directory.appendingPathComponent("file\((k * 7) % positions.count)-\(k).dcm"))
        }
    }

    @Test func slicesAreSortedAlongTheNormalWithSpacingFromPositions() throws {
        let positions = [[0, 0, 10.0], [0, 0, 2.5], [0, 0, 7.5], [0, 0, 5.0], [0, 0, 0.0]]
        try writeSeries(positions: positions)
        let (volumes, skipped) = try Series.load(folder: folder.path)
        #expect(skipped.isEmpty)
        let volume = try #require(volumes.first)
        #expect(volume.slices == 5 && volume.rows == 4 && volume.columns == 5)
        #expect(abs(volume.geometry.spacing[0] - 2.5) < 1e-9)
        #expect(volume.geometry.spacing[1] == 0.7 && volume.geometry.spacing[2] == 0.8)
        #expect(volume.geometry.origin == [0, 0, 0])
        #expect(volume.warnings.isEmpty)
        // Sorted by z: 0, 2.5, 5, 7.5, 10 → written slices 4, 1, 3, 2, 0; modality = stored × 0.5 − 1024.
        for (index, written) in [4, 1, 3, 2, 0].enumerated() {
            #expect(volume.slice(index).first == Float(Double(written * 100) * 0.5 - 1024))
        }
    }

    @Test func gapsDuplicatesAndTiltAreWarnedAbout() throws {
        try writeSeries(positions: [[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 2], [0, 0, 6]])
        let scan = try Series.scan(folder.path)
        let warnings = scan.series[0].warnings.joined(separator: "; ")
        #expect(warnings.contains("duplicate"))
        #expect(warnings.contains("gap"))

        let tilted = try TestSupport.temporaryFolder("dicom-tilt")
        for k in 0..<3 {
            // Positions step along y as well as z: a gantry tilt of 45°.
            try TestDICOMWriter.ctSlice(
                stored: Array(repeating: 0, count: 20), position: [0, Double(k), Double(k)],
                instance: k + 1
            ).write(to: tilted.appendingPathComponent("\(k).dcm"))
        }
        let tiltWarnings = try Series.scan(tilted.path).series[0].warnings.joined(separator: "; ")
        #expect(tiltWarnings.contains("tilted by 45.00°"))
    }

    @Test func nonUniformSpacingIsWarnedAbout() throws {
        try writeSeries(positions: [[0, 0, 0], [0, 0, 1], [0, 0, 2.2], [0, 0, 3.2]])
        let warnings = try Series.scan(folder.path).series[0].warnings.joined(separator: "; ")
        #expect(warnings.contains("non-uniform"))
    }

    @Test func seriesAreGroupedByUIDAndBrokenFilesSkippedWithReasons() throws {
        try writeSeries(positions: [[0, 0, 0], [0, 0, 1]], series: "1.2.3.1", subfolder: "one")
        try writeSeries(positions: [[0, 0, 0], [0, 0, 2], [0, 0, 4]], series: "1.2.3.2", subfolder: "two/deeper")
        try "not dicom".write(to: folder.appendingPathComponent("one/notes.txt"), atomically: true, encoding: .utf8)
        let (volumes, skipped) = try Series.load(folder: folder.path)
        #expect(volumes.map(\.seriesInstanceUID).sorted() == ["1.2.3.1", "1.2.3.2"])
        #expect(volumes.map(\.slices).sorted() == [2, 3])
        #expect(skipped.count == 1)
        #expect(skipped.first?.file.hasSuffix("notes.txt") == true)
        #expect(skipped.first?.reason.contains("not a DICOM file") == true)
    }

    @Test func folderWithoutImagesIsATypedError() throws {
        try "nothing".write(to: folder.appendingPathComponent("a.txt"), atomically: true, encoding: .utf8)
        #expect(throws: DICOMError.self) { try Series.load(folder: folder.path) }
    }
}

/// Enhanced multi-frame geometry: per-frame Plane Position and shared Pixel Measures from the functional groups.
struct EnhancedGeometryTests {
    @Test func framesOfAnEnhancedFileAreSortedByTheirOwnPositions() throws {
        let folder = try TestSupport.temporaryFolder("dicom-enhanced")
        // Three frames stored at z = 4, 0, 2 with values 40, 0, 20.
        let stored =
            [Int16](repeating: 40, count: 20) + [Int16](repeating: 0, count: 20)
            + [Int16](repeating: 20, count: 20)
        var writer = TestDICOMWriter.ctSlice(stored: stored, position: [0, 0, 0], slope: 1, intercept: 0)
        writer.remove(.imagePositionPatient)
        writer.remove(.pixelSpacing)
        writer.set(.numberOfFrames, "IS", "3")
        func group(_ sequence: DICOMTag, _ element: TestDICOMWriter.Element) -> TestDICOMWriter.Element {
            var holder = TestDICOMWriter()
            holder.setSequence(sequence, items: [[element]])
            return holder.elements[0]
        }
        writer.setSequence(
            .sharedFunctionalGroupsSequence,
            items: [
                [
                    group(.pixelMeasuresSequence, TestDICOMWriter.element(.pixelSpacing, "DS", "0.5\\0.6"))
                ]
            ])
        writer.setSequence(
            .perFrameFunctionalGroupsSequence,
            items: [4.0, 0, 2].map { z in
                [group(.planePositionSequence, TestDICOMWriter.element(.imagePositionPatient, "DS", "0\\0\\\(Int(z))"))]
            })
        try writer.write(to: folder.appendingPathComponent("enhanced.dcm"))
        let volume = try #require(try Series.load(folder: folder.path).volumes.first)
        #expect(volume.slices == 3)
        #expect([0, 1, 2].map { volume.slice($0).first } == [0, 20, 40])
        #expect(volume.geometry.spacing == [2, 0.5, 0.6])
        #expect(volume.geometry.origin == [0, 0, 0])
    }
}

/// A file whose pixels fail is skipped from its series with the reason; the other slices still load.
struct SeriesFailureTests {
    @Test func sliceThatFailsToDecodeIsSkippedAndTheRestLoads() throws {
        let folder = try TestSupport.temporaryFolder("dicom-partial")
        for k in 0..<3 {
            var writer = TestDICOMWriter.ctSlice(
                stored: Array(repeating: Int16(k), count: 20),
                position: [0, 0, Double(k)], instance: k + 1)
            if k == 1 {
                // Claims JPEG 2000, holds a fragment that is not a codestream.
                writer.transferSyntaxUID = "1.2.840.10008.1.2.4.90"
                let fragment: [UInt8] = [1, 2, 3, 4]
                let items =
                    TestDICOMWriter.uint16([0xFFFE, 0xE000]) + TestDICOMWriter.uint32(0)
                    + TestDICOMWriter.uint16([0xFFFE, 0xE000]) + TestDICOMWriter.uint32(4) + fragment
                    + TestDICOMWriter.uint16([0xFFFE, 0xE0DD]) + TestDICOMWriter.uint32(0)
                writer.set(.pixelData, "OB", items, claimedLength: 0xFFFF_FFFF)
            }
            try writer.write(to: folder.appendingPathComponent("\(k).dcm"))
        }
        let (volumes, skipped) = try Series.load(folder: folder.path)
        let volume = try #require(volumes.first)
        #expect(volume.slices == 2)
        #expect(volume.geometry.spacing[0] == 2)
        #expect(skipped.count == 1 && skipped[0].file.hasSuffix("1.dcm"))
        #expect(skipped.first?.reason.contains("JPEG 2000") == true)
    }
}
