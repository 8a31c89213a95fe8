/// Bilinear resampling of planes, shared by inference (slices to and from the training spacing) and training
/// (simulated lower resolution).
public enum BilinearResampling {
    /// Bilinear resampling of `planes` planes [rows, columns] to [toRows, toColumns], pixel centres aligned
    /// (source coordinate (i + 0.5) · rows / toRows − 0.5, clamped to the edge): what
    /// `scipy.ndimage.zoom(order=1, grid_mode=True, mode='nearest')` computes (checked against SciPy 1.17.1).
    public static func resample(
        _ values: [Float], planes: Int, rows: Int, columns: Int, toRows: Int,
        toColumns: Int
    ) -> [Float] {
        func taps(_ count: Int, _ from: Int) -> [(Int, Int, Float)] {
            (0..<count).map { i in
                let x = min(max((Double(i) + 0.5) * Double(from) / Double(count) - 0.5, 0), Double(from - 1))
                let low = Int(x.rounded(.down))
                return (low, min(low + 1, from - 1), Float(x - Double(low)))
            }
        }
        let rowTaps = taps(toRows, rows)
        let columnTaps = taps(toColumns, columns)
        var out = [Float](repeating: 0, count: planes * toRows * toColumns)
        for plane in 0..<planes {
            let source = plane * rows * columns
            let target = plane * toRows * toColumns
            for (i, (r0, r1, fr)) in rowTaps.enumerated() {
                for (j, (c0, c1, fc)) in columnTaps.enumerated() {
                    let top = values[source + r0 * columns + c0] * (1 - fc) + values[source + r0 * columns + c1] * fc
                    let bottom =
                        values[source + r1 * columns + c0] * (1 - fc)
                        + values[source + r1 * columns + c1] * fc
                    out[target + i * toColumns + j] = top * (1 - fr) + bottom * fr
                }
            }
        }
        return out
    }
}
