import Foundation
import ImageFiles
import SliceLabSupport

/// Renders label maps over their images: each class tinted from a palette, blended at alpha 0.5; background
/// (class 0) left clear.
public enum Overlay {
    /// How classes are coloured.
    public enum Palette: String, CaseIterable, Sendable {
        /// Classes told apart at a glance: matplotlib's `tab10` (blue, orange, green, red, purple, brown, pink,
        /// gray, olive, cyan) for classes 1–10, then hues a golden angle apart. The default.
        case distinct
        /// The original iOS DeepLab demo's: hue = class / 30 at full saturation and brightness (neighbouring
        /// classes get nearly the same hue).
        case hue30
    }

    /// matplotlib's `tab10` as 8-bit RGB (matplotlib.colors.TABLEAU_COLORS).
    static let tab10: [(UInt8, UInt8, UInt8)] = [
        (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
        (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)
    ]

    /// The tint of a class as 8-bit RGB.
    public static func color(ofClass label: Int, palette: Palette = .distinct) -> (UInt8, UInt8, UInt8) {
        switch palette {
        case .hue30: return hueColor((Double(label) / 30).truncatingRemainder(dividingBy: 1))
        case .distinct:
            if (1...tab10.count).contains(label) { return tab10[label - 1] }
            return hueColor((Double(label) * 0.618_033_988_749_895).truncatingRemainder(dividingBy: 1))
        }
    }

    /// Full saturation and brightness at `hue` in [0, 1).
    static func hueColor(_ hue: Double) -> (UInt8, UInt8, UInt8) {
        let hue = hue * 6
        let sector = Int(hue) % 6
        let fraction = hue - Double(Int(hue))
        let (q, t) = (1 - fraction, fraction)
        let rgb: (Double, Double, Double)
        switch sector {
        case 0: rgb = (1, t, 0)
        case 1: rgb = (q, 1, 0)
        case 2: rgb = (0, 1, t)
        case 3: rgb = (0, q, 1)
        case 4: rgb = (t, 0, 1)
        default: rgb = (1, 0, q)
        }
        func byte(_ v: Double) -> UInt8 { UInt8((v * 255).rounded()) }
        return (byte(rgb.0), byte(rgb.1), byte(rgb.2))
    }

    /// The display image of one frame as 8-bit RGB: gray images are stretched between their 0.5 and 99.5
    /// percentiles; color images are stretched by their overall range only when it exceeds 0…255.
    public static func displayRGB(_ image: ScanImage, frame: Int) -> [UInt8] {
        let pixels = Array(image.frame(frame))
        let sorted = pixels.filter { $0.isFinite }.sorted()
        var low: Float = 0
        var high: Float = 255
        if !sorted.isEmpty {
            if image.channels == 1 {
                low = Float(Percentile.ofSorted(sorted, 0.5))
                high = Float(Percentile.ofSorted(sorted, 99.5))
            } else if sorted.first! < 0 || sorted.last! > 255 {
                (low, high) = (sorted.first!, sorted.last!)
            }
        }
        let scale = high > low ? 255 / (high - low) : 0
        func byte(_ v: Float) -> UInt8 { v.isFinite ? UInt8(max(0, min(255, (v - low) * scale)).rounded()) : 0 }
        var rgb = [UInt8](repeating: 0, count: image.pixelsPerFrame * 3)
        for pixel in 0..<image.pixelsPerFrame {
            for channel in 0..<3 {
                rgb[pixel * 3 + channel] = byte(pixels[pixel * image.channels + (image.channels == 1 ? 0 : channel)])
            }
        }
        return rgb
    }

    /// Blends `labels` (one frame) over the display image of `image`'s frame and writes an RGB PNG.
    /// - Throws: `InputError.invalidContent` when the shapes differ; I/O errors naming `path`.
    public static func write(
        image: ScanImage, labels: LabelMap, frame: Int = 0, palette: Palette = .distinct, to path: String
    ) throws {
        do {
            try render(image: image, labels: labels, frame: frame, palette: palette).write(to: path)
        } catch let InputError.invalidContent(_, reason) {
            throw InputError.invalidContent(file: path, reason: reason)
        }
    }

    /// Blends `labels` (one frame) over the display image of `image`'s frame as an RGB image.
    public static func render(image: ScanImage, labels: LabelMap, frame: Int = 0, palette: Palette = .distinct) throws
        -> PNGImage
    {
        guard labels.rows == image.rows, labels.columns == image.columns, frame < min(image.frames, labels.frames)
        else {
            throw InputError.invalidContent(
                file: image.source,
                reason: "overlay: label map \(labels.rows)x\(labels.columns) "
                    + "does not match image \(image.rows)x\(image.columns)")
        }
        var rgb = displayRGB(image, frame: frame)
        let frameLabels = labels.frame(frame)
        for (pixel, label) in zip(0..., frameLabels) where label != 0 {
            let tint = color(ofClass: Int(label), palette: palette)
            for (channel, value) in [tint.0, tint.1, tint.2].enumerated() {
                let base = Double(rgb[pixel * 3 + channel])
                rgb[pixel * 3 + channel] = UInt8((0.5 * base + 0.5 * Double(value)).rounded())
            }
        }
        return try PNGImage(rows: image.rows, columns: image.columns, channels: 3, samples: rgb)
    }
}
