import DICOM
import DeepLab
import Foundation
import SliceLabIO
import SliceLabSupport

/// A DICOM series (a folder, or a file of one) segmented whole and written as a DICOM SEG or RT Structure Set
/// referencing it: what `segment … --out OUT.dcm` and the DICOM node's `listen` do with a series.
public enum SeriesSegmentation {
    /// The series, its image and its label map after post-processing.
    public struct Result {
        public var image: ScanImage
        public var series: Series
        public var labels: LabelMap
    }

    /// Segments every slice of the series at `input` (each slice's output given to `each`, for uncertainty maps),
    /// then post-processes the whole volume.
    ///
    /// - Throws: `InputError.unsupportedOutput` when `input` is not DICOM (`output` names what was asked for);
    ///   the readers', the model's and post-processing's errors.
    public static func segment(
        _ input: String, output: String, segmenter: VolumeSegmenter, postProcessing: SegmentPostProcessing,
        batch: Int = 1, limits: ReadLimits = .standard, each: (Int, SliceOutput) -> Void = { _, _ in },
        log: (String) -> Void = { _ in }
    ) throws -> Result {
        guard ImageLoader.isDICOM(input) else {
            throw InputError.unsupportedOutput(
                file: output,
                reason: "a DICOM SEG or RT Structure Set needs a DICOM file or series folder as INPUT, "
                    + "not \(input)")
        }
        let (image, source) = try ImageLoader.loadDICOMSeries(input, limits: limits)
        var labels: [Int32] = []
        var probabilities: [Float] = []
        var display: [Float] = []
        var channels = 1
        let post = !postProcessing.isNone
        try segmenter.runOutputs(
            slices: image.frames, rows: image.rows, columns: image.columns, channels: image.channels,
            spacing: image.hasSpacing ? image.spacing : nil, source: input, batch: batch,
            slice: { Array(image.frame($0)) }
        ) { frame, output in
            each(frame, output)
            labels += argmaxOverClasses(output.logits)
            if post {
                probabilities += softmaxOverClasses(output.logits).values
                let shown = SegmentPostProcessing.display(image, frame: frame)
                display += shown.values
                channels = shown.channels
            }
            if image.frames > 1 { log("segment: frame \(frame + 1)/\(image.frames)") }
        }
        if post {
            labels = try postProcessing.apply(
                labels: labels, probabilities: probabilities, classCount: segmenter.classCount, display: display,
                channels: channels, frames: image.frames, rows: image.rows, columns: image.columns,
                spacing: image.spacing)
        }
        let map = LabelMap(
            frames: image.frames, rows: image.rows, columns: image.columns, labels: labels, spacing: image.spacing)
        return Result(image: image, series: source, labels: map)
    }

    /// Writes `result` as `kind` with the checkpoint's class names and codes; `uids` fixes the result's Series and
    /// SOP Instance UIDs (new ones when nil).
    public static func write(
        _ result: Result, as kind: SegmentationExport.DICOMOutput, checkpoint: String, classCount: Int,
        uids: (series: String, instance: String)? = nil, to path: String
    ) throws {
        let names = try SegmentationExport.classNames(checkpoint: checkpoint, classCount: classCount)
        switch kind {
        case .seg:
            try SegmentationExport.write(
                labels: result.labels, series: result.series, classNames: names,
                codings: SegmentationExport.classCodings(checkpoint: checkpoint), uids: uids, to: path)
        case .rtstruct:
            try SegmentationExport.writeStructureSet(
                labels: result.labels, series: result.series, classNames: names, uids: uids, to: path)
        }
    }
}
