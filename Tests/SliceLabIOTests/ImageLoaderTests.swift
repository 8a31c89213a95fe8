import Foundation
import ImageFiles
import SliceLabIO
import TestSupport
import Testing

@Suite struct ImageLoaderTests {
    @Test func pngGrayAndRGBALoadAsOneAndThreeChannels() throws {
        let folder = try TestSupport.temporaryFolder()
        let gray = folder.appendingPathComponent("g.png").path
        try PNGImage(rows: 2, columns: 3, channels: 1, samples: [UInt16]([0, 1, 2, 3, 4, 65535])).write(to: gray)
        let image = try ImageLoader.load(gray)
        #expect(image.channels == 1 && image.frames == 1 && image.rows == 2 && image.columns == 3)
        #expect(image.values == [0, 1, 2, 3, 4, 65535])
        let rgba = folder.appendingPathComponent("c.png").path
        try PNGImage(rows: 1, columns: 2, channels: 4, samples: [UInt8]([10, 20, 30, 255, 40, 50, 60, 0])).write(
            to: rgba)
        let color = try ImageLoader.load(rgba)
        #expect(color.channels == 3)
        #expect(color.values == [10, 20, 30, 40, 50, 60])
        #expect(color.intensity(frame: 0) == [20, 50])
    }

    @Test func hdf5ImageWithSpacingFromConvertLoads() throws {
        let folder = try TestSupport.temporaryFolder()
        let path = folder.appendingPathComponent("i.h5").path
        try HDF5File.write(to: path) { file in
            try file.write((0..<24).map { Float($0) - 1000 }, shape: [2, 3, 4], to: "/image")
            try file.setAttribute("spacing", .doubles([0.7, 0.8, 2.5]), at: "/image")
            try file.setAttribute("modality", .string("CT"), at: "/image")
        }
        let image = try ImageLoader.load(path)
        #expect(image.frames == 2 && image.rows == 3 && image.columns == 4 && image.channels == 1)
        #expect(image.spacing == [2.5, 0.7, 0.8] && image.hasSpacing)
        #expect(image.modality == "CT")
        #expect(image.values.first == -1000)
    }

    @Test func badInputsNameTheFile() throws {
        let folder = try TestSupport.temporaryFolder()
        let missing = folder.appendingPathComponent("nope.png").path
        #expect(throws: InputError.unsupportedFile(file: missing, reason: "no such file or folder")) {
            try ImageLoader.load(missing)
        }
        let wrong = folder.appendingPathComponent("w.h5").path
        try HDF5File.write(to: wrong) { try $0.write([Float](repeating: 0, count: 5), shape: [5], to: "/image") }
        #expect(throws: InputError.self) { try ImageLoader.load(wrong) }
        let noImage = folder.appendingPathComponent("n.h5").path
        try HDF5File.write(to: noImage) { try $0.write([Float](repeating: 0, count: 4), shape: [2, 2], to: "/labels") }
        #expect(throws: ImageFileError.missing(file: noImage, object: "/image")) { try ImageLoader.load(noImage) }
    }

    @Test func labelMapsWriteAsHDF5AndPNG() throws {
        let folder = try TestSupport.temporaryFolder()
        let labels = LabelMap(frames: 2, rows: 2, columns: 2, labels: [0, 1, 2, 3, 3, 2, 1, 0], spacing: [2, 0.5, 0.5])
        let h5 = folder.appendingPathComponent("l.h5").path
        try labels.write(to: h5, elementType: .int32)
        let file = try HDF5File.open(h5)
        #expect(try file.elementType(of: "/labels") == .int32)
        #expect(try file.read("/labels", as: Int32.self) == HDF5Array(values: labels.labels, shape: [2, 2, 2]))
        let png = folder.appendingPathComponent("l.png").path
        #expect(throws: InputError.self) { try labels.write(to: png) }
        let single = LabelMap(frames: 1, rows: 1, columns: 3, labels: [0, 300, 2])
        try single.write(to: png)
        #expect(try PNGImage.read(png).intSamples == [0, 300, 2])
    }

    @Test func overlayTintsClassesByHueAndLeavesBackgroundClear() throws {
        #expect(Overlay.color(ofClass: 0, palette: .hue30) == (255, 0, 0))
        #expect(Overlay.color(ofClass: 1, palette: .hue30) == (255, 51, 0))
        #expect(Overlay.color(ofClass: 10, palette: .hue30) == (0, 255, 0))
        #expect(Overlay.color(ofClass: 20, palette: .hue30) == (0, 0, 255))
        let folder = try TestSupport.temporaryFolder()
        let image = ScanImage(frames: 1, rows: 1, columns: 2, channels: 1, values: [0, 100], source: "x")
        let path = folder.appendingPathComponent("o.png").path
        let labels = LabelMap(frames: 1, rows: 1, columns: 2, labels: [0, 10])
        try Overlay.write(image: image, labels: labels, palette: .hue30, to: path)
        #expect(try PNGImage.read(path).intSamples == [0, 0, 0, 128, 255, 128])
        // The default palette is matplotlib's tab10 (class 10: tab:cyan, #17becf), blended at 0.5 over white.
        try Overlay.write(image: image, labels: labels, to: path)
        #expect(try PNGImage.read(path).intSamples == [0, 0, 0, 139, 223, 231])
        #expect(Overlay.color(ofClass: 1) == (31, 119, 180) && Overlay.color(ofClass: 2) == (255, 127, 14))
    }
}
