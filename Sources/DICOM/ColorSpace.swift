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
        @inline(__always) func clipped(_ value: Float) -> UInt32 {
            UInt32(min(max((value + 0.5).rounded(.down), 0), maximum))
        }
        var out = [UInt32](repeating: 0, count: samples.count)
        out.withUnsafeMutableBufferPointer { out in
            samples.withUnsafeBufferPointer { samples in
                for pixel in 0..<(samples.count / 3) {
                    let y = Float(samples[3 * pixel])
                    let cb = Float(samples[3 * pixel + 1]) - half
                    let cr = Float(samples[3 * pixel + 2]) - half
                    out[3 * pixel] = clipped(y + cr * crToRed)
                    out[3 * pixel + 1] = clipped(y + cb * cbToGreen + cr * crToGreen)
                    out[3 * pixel + 2] = clipped(y + cb * cbToBlue)
                }
            }
        }
        return out
    }
}
