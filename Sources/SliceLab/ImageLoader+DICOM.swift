import DICOM

extension ImageLoader {
    /// Loads a DICOM file (all frames) or a series folder (one sorted volume) as modality values.
    static func loadDICOM(_ path: String) throws -> ScanImage {
        // Filled in by the DICOM reader (issue #3).
        throw InputError.unsupportedFile(file: path, reason: "DICOM input is not available in this build yet (issue #3)")
    }
}
