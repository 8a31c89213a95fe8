import DICOM

extension EvaluateInputs {
    /// Reads a DICOM SEG as a label map with its spacing (segment number = label). Isolated here so the DICOM
    /// reader (issue #3) plugs in without touching the rest of `evaluate`.
    static func loadDICOMSegmentation(_ path: String) throws -> LoadedLabels {
        throw InputError.unsupportedFile(file: path, reason: "DICOM SEG labels are not available in this build yet "
            + "(issue #3); use .png or .h5 label files")
    }
}
