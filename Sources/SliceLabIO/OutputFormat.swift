/// The kind of file an output path names, decided once from its ending (case-insensitive) for every command that
/// writes images or label maps; each command then says which kinds it writes.
public enum OutputFormat: String, CaseIterable, Sendable {
    case hdf5, nifti, png, dicom, nrrd

    /// The endings, lower case with their dot, that name the format.
    public var endings: [String] {
        switch self {
        case .hdf5: return [".h5", ".hdf5"]
        case .nifti: return [".nii.gz", ".nii"]
        case .png: return [".png"]
        case .dicom: return [".dcm"]
        case .nrrd: return [".seg.nrrd", ".nrrd"]
        }
    }

    /// The format `path` names by its ending, nil for any other ending.
    public init?(path: String) {
        let lowered = path.lowercased()
        guard let format = Self.allCases.first(where: { $0.endings.contains(where: lowered.hasSuffix) }) else {
            return nil
        }
        self = format
    }
}
