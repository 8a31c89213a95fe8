/// A coded concept (PS3.3 Code Sequence Macro): code value, coding scheme designator, code meaning.
public struct CodedConcept: Codable, Sendable, Equatable, Hashable {
    public var value: String
    public var scheme: String
    public var meaning: String

    public init(_ value: String, _ scheme: String, _ meaning: String) {
        (self.value, self.scheme, self.meaning) = (value, scheme, meaning)
    }

    /// Whether the three parts are present and fit their value representations (SH, SH, LO).
    public var problem: String? {
        if value.isEmpty || scheme.isEmpty || meaning.isEmpty { return "a code needs value, scheme and meaning" }
        if value.count > 16 || scheme.count > 16 || meaning.count > 64 {
            return "code '\(value)' (\(scheme)) is longer than DICOM allows (16, 16 and 64 characters)"
        }
        return nil
    }
}

/// What a segment of a DICOM SEG is, as viewers (OHIF, Slicer, Weasis) and highdicom read it: its Segmented
/// Property Category (CID 7150) and Type (CID 7151…) and, optionally, the Anatomic Region it lies in.
public struct SegmentCoding: Codable, Sendable, Equatable {
    public var category: CodedConcept
    public var type: CodedConcept
    public var region: CodedConcept?

    public init(category: CodedConcept, type: CodedConcept, region: CodedConcept? = nil) {
        (self.category, self.type, self.region) = (category, type, region)
    }

    /// Tissue / Tissue (SCT 85756007): what a class without codes is written as.
    public static let tissue = SegmentCoding(
        category: CodedConcept("85756007", "SCT", "Tissue"), type: CodedConcept("85756007", "SCT", "Tissue"))

    /// The first problem of its codes, if any.
    public var problem: String? { category.problem ?? type.problem ?? region?.problem }
}
