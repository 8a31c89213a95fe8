import DeepLab
import SliceLabIO

extension ScanImage {
    /// One frame as the network's input [1, C, H, W]: channels matched (RGB averaged to gray, gray repeated to
    /// RGB), then the checkpoint's preprocessing.
    public func networkInput(frame: Int, channels: Int, preprocessing: Preprocessing) -> FloatTensor {
        let plane = rows * columns
        var values: [Float]
        if channels == 1 {
            values = intensity(frame: frame)
        } else {
            let pixels = Array(self.frame(frame))
            values = [Float](repeating: 0, count: 3 * plane)
            for p in 0..<plane {
                for ch in 0..<3 { values[ch * plane + p] = pixels[p * self.channels + (self.channels == 1 ? 0 : ch)] }
            }
        }
        preprocessing.apply(to: &values)
        return FloatTensor(shape: [1, channels, rows, columns], values: values)
    }
}
