import Classical
import Foundation
import ImageFiles
import SliceLabSupport
import TestSupport
import Testing

/// End-to-end tests of `slicelab cluster`: the HDF5/PNG contract of issue #6, exit codes and error lines.
@Suite struct ClusterCLITests {
    /// A 48×64 8-bit gray image: three flat regions (40, 120, 200) plus seeded noise of ±8.
    static func grayPixels() -> [UInt8] {
        var generator = SeededGenerator(seed: 11)
        return (0..<(48 * 64)).map { index in
            let (row, column) = (index / 64, index % 64)
            let base = column < 20 ? 40 : (row < 24 ? 120 : 200)
            return UInt8(base + Int(generator.uniform() * 17) - 8)
        }
    }

    /// A 40×40 RGB image: red, green and blue thirds plus seeded noise.
    static func colorPixels() -> [UInt8] {
        var generator = SeededGenerator(seed: 12)
        let tints: [[Int]] = [[200, 40, 40], [40, 180, 60], [30, 30, 220]]
        var samples: [UInt8] = []
        for index in 0..<(40 * 40) {
            for base in tints[min(index % 40 / 14, 2)] {
                let noise = Int(generator.uniform() * 13) - 6
                samples.append(UInt8(max(0, min(255, base + noise))))
            }
        }
        return samples
    }

    static func run(_ arguments: [String]) throws -> TestSupport.ProcessResult {
        try TestSupport.slicelab(["cluster"] + arguments)
    }

    @Test func multiOtsuOnGrayWritesLabelsRegionsThresholdsAndAttributes() throws {
        let folder = try TestSupport.temporaryFolder("cluster-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("gray.png").path
        let pixels = Self.grayPixels()
        try PNGImage(rows: 48, columns: 64, channels: 1, samples: pixels).write(to: input)
        let out = folder.appendingPathComponent("out.h5").path
        let result = try Self.run([input, "--method", "multiotsu", "--classes", "3", "--out", out, "--seed", "5"])
        #expect(result.status == 0, "\(result.standardError)")
        let file = try HDF5File.open(out)
        #expect(try file.shape(of: "/labels") == [48, 64])
        #expect(try file.elementType(of: "/labels") == .int32)
        #expect(try file.elementType(of: "/regions") == .int32)
        let labels = try file.read("/labels", as: Int32.self).values
        let thresholds = try file.read("/thresholds", as: Double.self).values
        let expected = try Thresholding.multiOtsu(.integer(pixels.map(Int.init)), classes: 3)
        #expect(thresholds == expected)
        #expect(labels == Thresholding.digitize(pixels.map(Double.init), thresholds: expected))
        // Classes are ordered by mean intensity: 0 darkest.
        let means = (0..<3).map { label -> Double in
            let members = zip(labels, pixels).filter { $0.0 == Int32(label) }.map { Double($0.1) }
            return members.reduce(0, +) / Double(max(members.count, 1))
        }
        #expect(means == means.sorted())
        let regions = try file.read("/regions", as: Int32.self).values
        #expect(regions.min() == 1)
        let (expectedRegions, _) = try ConnectedComponents.label(
            LabelGrid(shape: GridShape(rows: 48, columns: 64), labels: labels), connectivity: 1)
        #expect(regions == expectedRegions.labels)
        #expect(try file.attribute("method").stringValue == "multiotsu")
        #expect(try file.attribute("space").stringValue == "gray")
        #expect(try file.attribute("seed").doubleValues == [5])
        #expect(file.hasAttribute("iterations"))
        #expect(!file.exists("/centers"))
    }

    @Test func kMeansInLabWritesCentresOrderedByLightnessInertiaAndAnOverlay() throws {
        let folder = try TestSupport.temporaryFolder("cluster-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("rgb.png").path
        try PNGImage(rows: 40, columns: 40, channels: 3, samples: Self.colorPixels()).write(to: input)
        let out = folder.appendingPathComponent("out.h5").path
        let overlay = folder.appendingPathComponent("overlay.png").path
        let result = try Self.run([
            input, "--method", "kmeans", "--classes", "3", "--space", "lab", "--n-init", "3",
            "--regularize", "mrf", "--min-region", "5", "--connectivity", "2",
            "--out", out, "--overlay", overlay
        ])
        #expect(result.status == 0, "\(result.standardError)")
        let file = try HDF5File.open(out)
        let centers = try file.read("/centers", as: Double.self)
        #expect(centers.shape == [3, 3])
        let lightness = (0..<3).map { centers.values[$0 * 3] }
        #expect(lightness == lightness.sorted())
        let inertia = try file.attribute("inertia").doubleValues?.first ?? -1
        #expect(inertia > 0)
        let labels = try file.read("/labels", as: Int32.self).values
        #expect(Set(labels) == [0, 1, 2])
        #expect(try file.attribute("regularize").stringValue == "mrf")
        let picture = try PNGImage.read(overlay)
        #expect(picture.rows == 40 && picture.columns == 40 && picture.channels == 3)
    }

    @Test(arguments: ["otsu", "histogram", "fcm", "gmm"])
    func everyMethodWritesAPNGLabelMap(method: String) throws {
        let folder = try TestSupport.temporaryFolder("cluster-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("gray.png").path
        try PNGImage(rows: 48, columns: 64, channels: 1, samples: Self.grayPixels()).write(to: input)
        let out = folder.appendingPathComponent("labels.png").path
        let classes = method == "otsu" ? "2" : "3"
        let result = try Self.run([input, "--method", method, "--classes", classes, "--out", out])
        #expect(result.status == 0, "\(result.standardError)")
        let labels = try PNGImage.read(out).intSamples
        #expect(labels.count == 48 * 64)
        #expect(Set(labels).count == Int(classes))
        // The left third (darkest) is class 0 everywhere.
        #expect((0..<48).allSatisfy { labels[$0 * 64 + 5] == 0 })
    }

    @Test func volumesKeepTheirSlicesAndRefusePNGOutput() throws {
        let folder = try TestSupport.temporaryFolder("cluster-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("volume.h5").path
        let values: [Float] = (0..<(4 * 10 * 12)).map { index -> Float in
            let base: Float = index % 12 < 6 ? 10 : 90
            return base + Float(index % 5)
        }
        try HDF5File.write(to: input) { try $0.write(values, shape: [4, 10, 12], to: "/image") }
        let out = folder.appendingPathComponent("out.h5").path
        let result = try Self.run([input, "--method", "kmeans", "--classes", "2", "--out", out, "--connectivity", "2"])
        #expect(result.status == 0, "\(result.standardError)")
        let file = try HDF5File.open(out)
        #expect(try file.shape(of: "/labels") == [4, 10, 12])
        #expect(try file.attribute("region_count").doubleValues == [2])
        #expect(try file.attribute("neighbourhood").doubleValues == [26])  // --connectivity 2 in 3-D
        let png = folder.appendingPathComponent("out.png").path
        let refused = try Self.run([input, "--method", "kmeans", "--classes", "2", "--out", png])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("write .h5 instead"))
        #expect(!FileManager.default.fileExists(atPath: png))
    }

    @Test func badInputsFailWithOneLineNamingTheFileAndWriteNothing() throws {
        let folder = try TestSupport.temporaryFolder("cluster-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let constant = folder.appendingPathComponent("constant.png").path
        try PNGImage(rows: 8, columns: 8, channels: 1, samples: [UInt8](repeating: 7, count: 64)).write(to: constant)
        let nan = folder.appendingPathComponent("nan.h5").path
        var values = [Float](repeating: 1, count: 64)
        values[19] = .nan
        try HDF5File.write(to: nan) { try $0.write(values, shape: [8, 8], to: "/image") }
        let out = folder.appendingPathComponent("out.h5").path
        let cases: [([String], Int32, String)] = [
            ([constant, "--method", "multiotsu", "--classes", "3"], 1, "only 1 distinct value"),
            ([constant, "--method", "kmeans", "--classes", "2"], 1, "only 1 distinct value"),
            ([nan, "--method", "kmeans", "--classes", "2"], 1, "pixel 19"),
            ([constant, "--method", "kmeans", "--classes", "2", "--space", "lab"], 2, "needs a color image"),
            ([constant, "--method", "otsu", "--classes", "3"], 2, "use --method multiotsu"),
            (
                [folder.appendingPathComponent("missing.png").path, "--method", "otsu", "--classes", "2"], 1,
                "no such file"
            )
        ]
        for (arguments, status, message) in cases {
            let result = try Self.run(arguments + ["--out", out])
            #expect(result.status == status, "\(arguments): \(result.standardError)")
            let lines = result.standardError.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains(message), "\(arguments): \(result.standardError)")
            #expect(!FileManager.default.fileExists(atPath: out))
        }
        // A constant image under Otsu is the documented degenerate case: one class, threshold = the value.
        let result = try Self.run([constant, "--method", "otsu", "--classes", "2", "--out", out])
        #expect(result.status == 0)
        let file = try HDF5File.open(out)
        #expect(try file.read("/thresholds", as: Double.self).values == [7])
        #expect(Set(try file.read("/labels", as: Int32.self).values) == [0])
    }
}
