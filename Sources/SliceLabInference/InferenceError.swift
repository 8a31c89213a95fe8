/// The errors of inference's options: classical specifications and combinations that cannot run, and post-processing
/// steps that do not exist or do not fit the input. Each says what was asked and why it cannot be done; the command
/// line names its flags when it reports one.
public enum InferenceError: Error, CustomStringConvertible, Equatable {
    // MARK: - Classical methods

    /// A classical specification (`kmeans:clusters=3,space=lab`) that cannot be parsed: the text and why.
    case invalidClassicalSpec(text: String, reason: String)
    /// A colour space other than gray for a gray image.
    case colorSpaceNeedsColor(space: ClusterSpace, file: String)
    /// A method that thresholds one channel, in a colour space without a lightness channel.
    case noLightnessChannel(method: ClusterMethod, space: ClusterSpace)
    /// A method that needs at least two classes.
    case tooFewClasses(method: ClusterMethod)
    /// Otsu's method, which makes exactly two classes, asked for another number.
    case otsuMakesTwoClasses(classes: Int)
    /// A post-processing step that works on class probabilities (`crf`): a classical run has labels only.
    case regularizerNeedsProbabilities(PostProcessingStepName)

    // MARK: - Post-processing

    /// A step that works on class probabilities, given a label-only input.
    case needsProbabilities(step: String)
    /// A name that is no registered step.
    case unknownStep(name: String, known: [String])
    /// A stored `--post auto` choice (OUT/postprocessing.json) that cannot be read, or that is asked for where there
    /// is none: the file (or the models) and the cause.
    case invalidPostProcessingChoice(file: String, reason: String)

    // MARK: - Ensembles

    /// A checkpoint that cannot be averaged with the ensemble's first: both files and the difference.
    case ensembleMismatch(member: String, first: String, reason: String)

    public var description: String {
        switch self {
        case .ensembleMismatch(let member, let first, let reason):
            return first.isEmpty
                ? "an ensemble needs a checkpoint: \(reason)"
                : "\(member) cannot be averaged with \(first): \(reason)"
        case .invalidClassicalSpec(let text, let reason): return "'\(text)': \(reason)"
        case .colorSpaceNeedsColor(let space, let file):
            return "color space \(space.rawValue) needs a color image, but \(file) is gray"
        case .noLightnessChannel(let method, let space):
            return "method \(method.rawValue) thresholds one channel; color space \(space.rawValue) has no lightness "
                + "channel (use gray, lab, hsv or ycbcr)"
        case .tooFewClasses(let method): return "method \(method.rawValue) needs at least 2 classes"
        case .otsuMakesTwoClasses(let classes):
            return "Otsu's method makes 2 classes, not \(classes); multi-Otsu makes more"
        case .regularizerNeedsProbabilities(let step):
            return "regularizer \(step) works on class probabilities, which a classical method does not produce"
        case .needsProbabilities(let step):
            return "post-processing step '\(step)' works on class probabilities, and this input has labels only"
        case .invalidPostProcessingChoice(let file, let reason):
            return "\(file): \(reason)"
        case .unknownStep(let name, let known):
            return "unknown post-processing step '\(name)'; steps: \(known.joined(separator: ", ")) (chain them with "
                + "commas, as largest-component,fill-holes)"
        }
    }
}
