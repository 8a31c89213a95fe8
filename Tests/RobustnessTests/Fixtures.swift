import DeepLab
import DeepLabTraining
import Foundation
import ImageFiles
import SliceLabSupport

/// Inputs the robustness tests generate: DICOM files written byte by byte (valid CT slices and broken ones),
/// a small labeled set of PNGs, and an untrained, seeded model.
enum Fixtures {
    // MARK: - DICOM bytes (explicit VR little endian, PS3.5 7.1.2)

    /// One data element; `claimedLength` is written instead of the value's length (to claim bytes that do not
    /// follow).
    static func element(
        _ group: UInt16, _ number: UInt16, _ vr: String, _ value: [UInt8],
        claimedLength: UInt32? = nil
    ) -> [UInt8] {
        let length = claimedLength ?? UInt32(value.count)
        var bytes = le16(group) + le16(number) + Array(vr.utf8)
        if ["OB", "OW", "SQ", "UN", "UT"].contains(vr) {
            bytes += [0, 0] + le32(length)
        } else {
            bytes += le16(UInt16(truncatingIfNeeded: length))
        }
        return bytes + value
    }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> (8 * $0) & 0xFF) } }

    /// Text padded to even length (UIDs with NUL, others with space).
    static func text(_ value: String, uid: Bool = false) -> [UInt8] {
        var bytes = Array(value.utf8)
        if bytes.count % 2 == 1 { bytes.append(uid ? 0 : 0x20) }
        return bytes
    }

    /// A 16-bit unsigned CT image (rescale −1024 + 1 × stored) of `frames` frames at z = `position`, in series
    /// `series`; `claimedPixelLength` lets callers lie about the pixels. `encapsulated` stores `stored` as one RLE
    /// Lossless fragment (PS3.5 A.4) instead of native pixels.
    static func ctFile(
        rows: Int, columns: Int, frames: Int = 1, stored: [UInt16], position: Double, instance: Int,
        series: String = "1.2.826.0.1.3680043.10.1", claimedPixelLength: UInt32? = nil,
        encapsulated: Bool = false
    ) -> [UInt8] {
        let sopClass = "1.2.840.10008.5.1.4.1.1.2"
        let instanceUID = "\(series).\(instance)"
        var meta = element(0x0002, 0x0001, "OB", [0, 1])
        meta += element(0x0002, 0x0002, "UI", text(sopClass, uid: true))
        meta += element(0x0002, 0x0003, "UI", text(instanceUID, uid: true))
        meta += element(
            0x0002, 0x0010, "UI", text(encapsulated ? "1.2.840.10008.1.2.5" : "1.2.840.10008.1.2.1", uid: true))
        var body = element(0x0008, 0x0016, "UI", text(sopClass, uid: true))
        body += element(0x0008, 0x0018, "UI", text(instanceUID, uid: true))
        body += element(0x0008, 0x0060, "CS", text("CT"))
        body += element(0x0010, 0x0010, "PN", text("Robustness^Test"))
        body += element(0x0010, 0x0020, "LO", text("R1"))
        body += element(0x0020, 0x000D, "UI", text("1.2.826.0.1.3680043.10.100", uid: true))
        body += element(0x0020, 0x000E, "UI", text(series, uid: true))
        body += element(0x0020, 0x0013, "IS", text("\(instance)"))
        body += element(0x0020, 0x0032, "DS", text("0\\0\\\(position)"))
        body += element(0x0020, 0x0037, "DS", text("1\\0\\0\\0\\1\\0"))
        body += element(0x0028, 0x0002, "US", le16(1))
        body += element(0x0028, 0x0004, "CS", text("MONOCHROME2"))
        if frames > 1 { body += element(0x0028, 0x0008, "IS", text("\(frames)")) }
        body += element(0x0028, 0x0010, "US", le16(UInt16(truncatingIfNeeded: rows)))
        body += element(0x0028, 0x0011, "US", le16(UInt16(truncatingIfNeeded: columns)))
        body += element(0x0028, 0x0030, "DS", text("0.5\\0.5"))
        body += element(0x0028, 0x0100, "US", le16(16))
        body += element(0x0028, 0x0101, "US", le16(16))
        body += element(0x0028, 0x0102, "US", le16(15))
        body += element(0x0028, 0x0103, "US", le16(0))
        body += element(0x0028, 0x1052, "DS", text("-1024"))
        body += element(0x0028, 0x1053, "DS", text("1"))
        if encapsulated {
            let item = { (data: [UInt8]) in le16(0xFFFE) + le16(0xE000) + le32(UInt32(data.count)) + data }
            body += element(
                0x7FE0, 0x0010, "OB",
                item([]) + item(stored.flatMap(le16)) + le16(0xFFFE) + le16(0xE0DD)
                    + le32(0), claimedLength: 0xFFFF_FFFF)
        } else {
            body += element(0x7FE0, 0x0010, "OW", stored.flatMap(le16), claimedLength: claimedPixelLength)
        }
        return [UInt8](repeating: 0, count: 128) + Array("DICM".utf8)
            + element(0x0002, 0x0000, "UL", le32(UInt32(meta.count))) + meta + body
    }

    // MARK: - A labeled set and a model

    /// Writes a labeled set of `count` `size`×`size` cases (bright discs = 1, squares = 2 on a noisy background
    /// = 0; 16-bit PNG images, 8-bit PNG labels), the first `trainCount` in `train`, the rest in `test`, and
    /// returns its folder. Deterministic under `seed`.
    static func labeledSet(
        in folder: URL, count: Int = 6, trainCount: Int = 3, size: Int = 32,
        seed: UInt64 = 7
    ) throws -> URL {
        let root = folder.appendingPathComponent("set")
        for sub in ["images", "labels"] {
            try FileManager.default.createDirectory(
                at: root.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        var random = SeededGenerator(seed: seed)
        var names: [String] = []
        for index in 0..<count {
            let name = String(format: "case%02d", index)
            names.append(name)
            var pixels = [UInt16](repeating: 0, count: size * size)
            var labels = [UInt8](repeating: 0, count: size * size)
            let (cy, cx) = (size / 3 + index % 3, size / 3 + index % 2 * 2)
            let radius = size / 6
            for y in 0..<size {
                for x in 0..<size {
                    var (value, label): (Int, UInt8) = (100, 0)
                    if (y - cy) * (y - cy) + (x - cx) * (x - cx) < radius * radius { (value, label) = (600, 1) }
                    if y > size * 2 / 3, x > size / 2 { (value, label) = (1100, 2) }
                    pixels[y * size + x] = UInt16(value + Int(random.next() % 81) - 40)
                    labels[y * size + x] = label
                }
            }
            try PNGImage(rows: size, columns: size, channels: 1, samples: pixels)
                .write(to: root.appendingPathComponent("images/\(name).png").path)
            try PNGImage(rows: size, columns: size, channels: 1, samples: labels)
                .write(to: root.appendingPathComponent("labels/\(name).png").path)
        }
        let rest = Array(names.suffix(from: trainCount))
        let json: [String: Any] = [
            "name": "shapes", "classes": ["background", "disc", "square"], "modality": "OT",
            "splits": ["train": Array(names.prefix(trainCount)), "test": rest], "spacing": [0.5, 0.5],
            "preprocessing": ["normalize": "window", "center": 600, "width": 1200]
        ]
        try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
            .write(to: root.appendingPathComponent("dataset.json"))
        return root
    }

    /// An untrained, seeded DeepLabV3-ResNet-18 (narrow ASPP) for 3 classes and gray input.
    static func model(in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("model.h5").path
        let model = try DeepLabV3(
            DeepLabConfiguration(
                architecture: .resnet18, classCount: 3, inputChannels: 1,
                outputStride: 16, atrousRates: [6, 12, 18], asppChannels: 32))
        try DeepLabCheckpoint.save(model, preprocessing: .window(center: 600, width: 1200), to: path)
        return path
    }

    // MARK: - Files

    /// Temporaries a writer leaves beside its destinations (`.NAME.tmp-PID-N`, `.NAME.old-PID-N`), recursively.
    static func leftoverTemporaries(in folder: URL) -> [String] {
        let paths = FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? []
        return paths.filter {
            let name = ($0 as NSString).lastPathComponent
            return name.hasPrefix(".") && (name.contains(".tmp-") || name.contains(".old-"))
        }
    }

    static func bytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }
}
