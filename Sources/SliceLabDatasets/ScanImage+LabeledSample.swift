import DeepLabTraining
import SliceLabIO

extension ScanImage {
    /// A case's image as a channels-last `ScanImage`.
    public init(_ sample: LabeledSample) {
        let shape = sample.image.shape  // [F, C, H, W]
        let (frames, channels, rows, columns) = (shape[0], shape[1], shape[2], shape[3])
        let plane = rows * columns
        var values = [Float](repeating: 0, count: sample.image.values.count)
        for f in 0..<frames {
            for c in 0..<channels {
                let source = (f * channels + c) * plane
                for p in 0..<plane { values[(f * plane + p) * channels + c] = sample.image.values[source + p] }
            }
        }
        self.init(
            frames: frames, rows: rows, columns: columns, channels: channels, values: values,
            spacing: sample.spacing, source: sample.name, hasSpacing: true)
    }
}

extension LabelMap {
    /// Labels [frames, rows, columns] on a case's grid.
    public init(_ labels: [Int32], like sample: LabeledSample) {
        let shape = sample.image.shape
        self.init(frames: shape[0], rows: shape[2], columns: shape[3], labels: labels, spacing: sample.spacing)
    }
}
