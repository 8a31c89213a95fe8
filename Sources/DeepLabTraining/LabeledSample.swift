import DeepLab
import ImageFiles
import SliceLabSupport

/// One loaded case: the raw image [F, C, H, W] (F frames: 1 for a 2D image, the slices of a volume; not yet
/// preprocessed) and its labels [F, H, W].
public struct LabeledSample: Sendable {
    public let name: String
    public var image: FloatTensor
    public var labels: LabelTensor
    /// Voxel spacing in mm (slice, row, column): the image's own, else `dataset.json`'s, else 1.
    public var spacing: [Double] = [1, 1, 1]
    /// The image's full geometry when its file has one (NIfTI), for writing label volumes beside it.
    public var geometry: VolumeGeometry?
    /// Whether `spacing` came from the image or `dataset.json` (false: the default 1).
    public var hasSpacing = false

    public init(
        name: String, image: FloatTensor, labels: LabelTensor, spacing: [Double] = [1, 1, 1],
        geometry: VolumeGeometry? = nil, hasSpacing: Bool = false
    ) {
        (self.name, self.image, self.labels, self.spacing) = (name, image, labels, spacing)
        (self.geometry, self.hasSpacing) = (geometry, hasSpacing)
    }

    public var frameCount: Int { image.shape[0] }

    /// Frame `index` as an image [C, H, W] and labels [H, W].
    public func frame(_ index: Int) -> (image: FloatTensor, labels: LabelTensor) {
        let (channels, height, width) = (image.shape[1], image.shape[2], image.shape[3])
        let size = channels * height * width
        let plane = height * width
        return (
            FloatTensor(
                shape: [channels, height, width],
                values: Array(image.values[(index * size)..<((index + 1) * size)])),
            LabelTensor(shape: [height, width], values: Array(labels.values[(index * plane)..<((index + 1) * plane)]))
        )
    }
}
