/// Colour conversions to RGB (PS3.3 C.7.6.3.1.2).
enum ColorSpace {
    /// YBR_FULL → RGB with pydicom's coefficients and rounding (Float32 arithmetic, round half up, clipped to
    /// the sample range); `samples` interleaved [Y, Cb, Cr] per pixel.
    static func ybrFullToRGB(_ samples: [Int64], bitsAllocated: Int) -> [UInt32] {
        let maximum = Float((1 << min(bitsAllocated, 16)) - 1)
        let half = Float(1 << (min(bitsAllocated, 16) - 1))
        let crToRed: Float = 1.402
        let cbToGreen: Float = -0.114 * 1.772 / 0.587
        let crToGreen: Float = -0.299 * 1.402 / 0.587
        let cbToBlue: Float = 1.772
        var out = [UInt32](repeating: 0, count: samples.count)
        for pixel in 0..<(samples.count / 3) {
            let y = Float(samples[3 * pixel])
            let cb = Float(samples[3 * pixel + 1]) - half
            let cr = Float(samples[3 * pixel + 2]) - half
            let red = y + cr * crToRed
            let green = y + cb * cbToGreen + cr * crToGreen
            let blue = y + cb * cbToBlue
            for (k, value) in [red, green, blue].enumerated() {
                out[3 * pixel + k] = UInt32(min(max((value + 0.5).rounded(.down), 0), maximum))
            }
        }
        return out
    }
}
