import CDCMTK

/// Errors reading or writing DICOM, each naming the file and the cause.
public enum DICOMError: Error, CustomStringConvertible, Equatable {
    case unreadable(file: String, reason: String)

    public var description: String {
        switch self {
        case let .unreadable(file, reason): return "\(file): cannot read DICOM: \(reason)"
        }
    }
}

/// The version of DCMTK underneath the reader.
public var dcmtkVersion: String { String(cString: cdcmtk_version()) }
