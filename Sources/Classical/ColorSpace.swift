import Foundation

/// The space whose coordinates a pixel's features are.
///
/// Conversions take sRGB in [0, 1] (8-bit images divided by 255, as `skimage.img_as_float`) and follow
/// scikit-image's `skimage.color` formulas, so the features match those functions to rounding.
public enum ColorSpace: String, CaseIterable, Sendable, Codable {
    /// One channel: the intensity itself for gray input; `skimage.color.rgb2gray` (ITU-R BT.709 luma
    /// weights 0.2125, 0.7154, 0.0721 on the unlinearised values) for RGB input.
    case gray
    /// R, G, B unchanged.
    case rgb
    /// Chromaticity r = R/(R+G+B), g, b; black (sum 0) maps to (1/3, 1/3, 1/3).
    case rgbNormalized = "rgbnorm"
    /// Hue, saturation, value in [0, 1], as `skimage.color.rgb2hsv`.
    case hsv
    /// CIE L*a*b* from sRGB, D65 white, 2° observer, as `skimage.color.rgb2lab`.
    case lab
    /// Y'CbCr (ITU-R BT.601, studio swing: Y in [16, 235]), as `skimage.color.rgb2ycbcr`.
    case yCbCr = "ycbcr"

    /// The number of feature channels produced.
    public var channelCount: Int { self == .gray ? 1 : 3 }

    /// The index of the channel that orders classes by brightness: L* for Lab, Y for YCbCr, V for HSV,
    /// the only channel for gray; nil for spaces without one (RGB and rgbnorm use the pixel's gray value).
    public var lightnessChannel: Int? {
        switch self {
        case .gray, .lab, .yCbCr: return 0
        case .hsv: return 2
        case .rgb, .rgbNormalized: return nil
        }
    }

    /// Converts pixels to this space.
    ///
    /// - Parameter pixels: one row per pixel; 1 channel (gray, any range) or 3 channels (sRGB in [0, 1]).
    /// - Returns: one row per pixel with `channelCount` channels.
    /// - Throws: `ClassicalError.invalidArgument` for a color space asked of a gray image or a channel count
    ///   other than 1 or 3; `.nonFiniteValue` for NaN or infinity; `.emptyInput` for no pixels.
    public func convert(_ pixels: FeatureMatrix) throws -> FeatureMatrix {
        try pixels.validate("the image")
        if pixels.dimension == 1 {
            guard self == .gray else {
                throw ClassicalError.invalidArgument(
                    "color space '\(rawValue)' needs an RGB image, but the image has "
                        + "one channel; use the gray color space")
            }
            return pixels
        }
        guard pixels.dimension == 3 else {
            throw ClassicalError.invalidArgument(
                "images must have 1 (gray) or 3 (RGB) channels, not \(pixels.dimension)")
        }
        var output = [Double](repeating: 0, count: pixels.count * channelCount)
        pixels.values.withUnsafeBufferPointer { input in
            for index in 0..<pixels.count {
                let (red, green, blue) = (input[3 * index], input[3 * index + 1], input[3 * index + 2])
                switch self {
                case .gray:
                    output[index] = 0.2125 * red + 0.7154 * green + 0.0721 * blue
                case .rgb:
                    (output[3 * index], output[3 * index + 1], output[3 * index + 2]) = (red, green, blue)
                case .rgbNormalized:
                    let sum = red + green + blue
                    let triple = sum > 0 ? (red / sum, green / sum, blue / sum) : (1.0 / 3, 1.0 / 3, 1.0 / 3)
                    (output[3 * index], output[3 * index + 1], output[3 * index + 2]) = triple
                case .hsv:
                    (output[3 * index], output[3 * index + 1], output[3 * index + 2]) = Self.hsv(red, green, blue)
                case .lab:
                    (output[3 * index], output[3 * index + 1], output[3 * index + 2]) = Self.lab(red, green, blue)
                case .yCbCr:
                    (output[3 * index], output[3 * index + 1], output[3 * index + 2]) =
                        Self.yCbCr(red, green, blue)
                }
            }
        }
        return FeatureMatrix(count: pixels.count, dimension: channelCount, values: output)
    }

    // MARK: - Formulas (skimage.color)

    /// `rgb2hsv`: ties between maxima resolve to blue, then green, then red, as skimage's masked assignments.
    static func hsv(_ red: Double, _ green: Double, _ blue: Double) -> (Double, Double, Double) {
        let value = max(red, green, blue)
        let delta = value - min(red, green, blue)
        guard delta != 0 else { return (0, 0, value) }
        let saturation = delta / value
        var hue: Double
        if blue == value {
            hue = 4 + (red - green) / delta
        } else if green == value {
            hue = 2 + (blue - red) / delta
        } else {
            hue = (green - blue) / delta
        }
        hue /= 6
        hue -= (hue).rounded(.down)  // Python's `% 1.0`: result in [0, 1)
        return (hue, saturation, value)
    }

    /// The D65 2° reference white in XYZ (`skimage.color.xyz_tristimulus_values`).
    static let whiteD65: (Double, Double, Double) = (0.95047, 1.0, 1.08883)

    /// `rgb2lab`: sRGB linearisation, `xyz_from_rgb`, then CIE 1976 with skimage's constants (0.008856, 7.787).
    static func lab(_ red: Double, _ green: Double, _ blue: Double) -> (Double, Double, Double) {
        func linear(_ value: Double) -> Double {
            value > 0.04045 ? pow((value + 0.055) / 1.055, 2.4) : value / 12.92
        }
        let (r, g, b) = (linear(red), linear(green), linear(blue))
        let x = (0.412453 * r + 0.357580 * g + 0.180423 * b) / whiteD65.0
        let y = (0.212671 * r + 0.715160 * g + 0.072169 * b) / whiteD65.1
        let z = (0.019334 * r + 0.119193 * g + 0.950227 * b) / whiteD65.2
        func f(_ t: Double) -> Double { t > 0.008856 ? cbrt(t) : 7.787 * t + 16.0 / 116.0 }
        let (fx, fy, fz) = (f(x), f(y), f(z))
        return (116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz))
    }

    /// `rgb2ycbcr`.
    static func yCbCr(_ red: Double, _ green: Double, _ blue: Double) -> (Double, Double, Double) {
        (
            16 + 65.481 * red + 128.553 * green + 24.966 * blue,
            128 - 37.797 * red - 74.203 * green + 112.0 * blue,
            128 + 112.0 * red - 93.786 * green - 18.214 * blue
        )
    }
}
