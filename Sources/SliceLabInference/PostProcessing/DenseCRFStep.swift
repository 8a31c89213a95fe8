import Classical
import SliceLabIO
import SliceLabSupport

/// A fully connected CRF over the model's class probabilities and the display image (`DenseCRF`, with the
/// context's `crf` parameters); 3-D over a volume, positions in millimetres.
struct DenseCRFStep: PostProcessingStep {
    static let name = "crf"
    static let needsProbabilities = true

    static func apply(_ map: LabelGrid<Int32>, context: PostProcessingContext) throws -> LabelGrid<Int32> {
        guard let probabilities = context.probabilities, let image = context.displayImage else {
            throw InferenceError.needsProbabilities(step: name)
        }
        let marginals = try DenseCRF.marginals(
            probabilities: probabilities, classCount: context.classCount,
            image: image, channels: context.displayChannels, shape: map.shape,
            spacing: map.spacing, parameters: context.crf)
        return LabelGrid(
            shape: map.shape, spacing: map.spacing,
            labels: DenseCRF.labels(marginals: marginals, classCount: context.classCount))
    }
}
