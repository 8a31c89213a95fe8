/// A DICOM attribute tag (group, element), e.g. `DicomTag(0x0028, 0x0010)` for Rows.
public struct DicomTag: Hashable, Sendable, CustomStringConvertible {
    public let group: UInt16
    public let element: UInt16

    public init(_ group: UInt16, _ element: UInt16) {
        self.group = group
        self.element = element
    }

    /// "(0028,0010)".
    public var description: String {
        func hex(_ value: UInt16) -> String {
            let digits = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: 4 - digits.count) + digits
        }
        return "(\(hex(group)),\(hex(element)))"
    }
}

/// The attributes SliceLab reads, by their keyword (PS3.6).
extension DicomTag {
    public static let transferSyntaxUID = DicomTag(0x0002, 0x0010)
    public static let sopClassUID = DicomTag(0x0008, 0x0016)
    public static let sopInstanceUID = DicomTag(0x0008, 0x0018)
    public static let studyDate = DicomTag(0x0008, 0x0020)
    public static let modality = DicomTag(0x0008, 0x0060)
    public static let manufacturer = DicomTag(0x0008, 0x0070)
    public static let studyDescription = DicomTag(0x0008, 0x1030)
    public static let seriesDescription = DicomTag(0x0008, 0x103E)
    public static let referencedSeriesSequence = DicomTag(0x0008, 0x1115)
    public static let referencedInstanceSequence = DicomTag(0x0008, 0x114A)
    public static let referencedSOPClassUID = DicomTag(0x0008, 0x1150)
    public static let referencedSOPInstanceUID = DicomTag(0x0008, 0x1155)
    public static let referencedFrameNumber = DicomTag(0x0008, 0x1160)
    public static let sourceImageSequence = DicomTag(0x0008, 0x2112)
    public static let derivationImageSequence = DicomTag(0x0008, 0x9124)
    public static let patientName = DicomTag(0x0010, 0x0010)
    public static let patientID = DicomTag(0x0010, 0x0020)
    public static let sliceThickness = DicomTag(0x0018, 0x0050)
    public static let spacingBetweenSlices = DicomTag(0x0018, 0x0088)
    public static let studyInstanceUID = DicomTag(0x0020, 0x000D)
    public static let seriesInstanceUID = DicomTag(0x0020, 0x000E)
    public static let seriesNumber = DicomTag(0x0020, 0x0011)
    public static let instanceNumber = DicomTag(0x0020, 0x0013)
    public static let imagePositionPatient = DicomTag(0x0020, 0x0032)
    public static let imageOrientationPatient = DicomTag(0x0020, 0x0037)
    public static let frameOfReferenceUID = DicomTag(0x0020, 0x0052)
    public static let dimensionIndexValues = DicomTag(0x0020, 0x9157)
    public static let planePositionSequence = DicomTag(0x0020, 0x9113)
    public static let planeOrientationSequence = DicomTag(0x0020, 0x9116)
    public static let samplesPerPixel = DicomTag(0x0028, 0x0002)
    public static let photometricInterpretation = DicomTag(0x0028, 0x0004)
    public static let planarConfiguration = DicomTag(0x0028, 0x0006)
    public static let numberOfFrames = DicomTag(0x0028, 0x0008)
    public static let rows = DicomTag(0x0028, 0x0010)
    public static let columns = DicomTag(0x0028, 0x0011)
    public static let pixelSpacing = DicomTag(0x0028, 0x0030)
    public static let bitsAllocated = DicomTag(0x0028, 0x0100)
    public static let bitsStored = DicomTag(0x0028, 0x0101)
    public static let highBit = DicomTag(0x0028, 0x0102)
    public static let pixelRepresentation = DicomTag(0x0028, 0x0103)
    public static let windowCenter = DicomTag(0x0028, 0x1050)
    public static let windowWidth = DicomTag(0x0028, 0x1051)
    public static let rescaleIntercept = DicomTag(0x0028, 0x1052)
    public static let rescaleSlope = DicomTag(0x0028, 0x1053)
    public static let rescaleType = DicomTag(0x0028, 0x1054)
    public static let voiLUTFunction = DicomTag(0x0028, 0x1056)
    public static let redPaletteDescriptor = DicomTag(0x0028, 0x1101)
    public static let greenPaletteDescriptor = DicomTag(0x0028, 0x1102)
    public static let bluePaletteDescriptor = DicomTag(0x0028, 0x1103)
    public static let redPaletteData = DicomTag(0x0028, 0x1201)
    public static let greenPaletteData = DicomTag(0x0028, 0x1202)
    public static let bluePaletteData = DicomTag(0x0028, 0x1203)
    public static let segmentedRedPaletteData = DicomTag(0x0028, 0x1221)
    public static let segmentedGreenPaletteData = DicomTag(0x0028, 0x1222)
    public static let segmentedBluePaletteData = DicomTag(0x0028, 0x1223)
    public static let lutDescriptor = DicomTag(0x0028, 0x3002)
    public static let lutData = DicomTag(0x0028, 0x3006)
    public static let modalityLUTSequence = DicomTag(0x0028, 0x3000)
    public static let voiLUTSequence = DicomTag(0x0028, 0x3010)
    public static let pixelMeasuresSequence = DicomTag(0x0028, 0x9110)
    public static let frameVOILUTSequence = DicomTag(0x0028, 0x9132)
    public static let pixelValueTransformationSequence = DicomTag(0x0028, 0x9145)
    public static let segmentSequence = DicomTag(0x0062, 0x0002)
    public static let segmentedPropertyCategoryCodeSequence = DicomTag(0x0062, 0x0003)
    public static let segmentNumber = DicomTag(0x0062, 0x0004)
    public static let segmentLabel = DicomTag(0x0062, 0x0005)
    public static let segmentationType = DicomTag(0x0062, 0x0001)
    public static let maximumFractionalValue = DicomTag(0x0062, 0x000E)
    public static let segmentIdentificationSequence = DicomTag(0x0062, 0x000A)
    public static let referencedSegmentNumber = DicomTag(0x0062, 0x000B)
    public static let sharedFunctionalGroupsSequence = DicomTag(0x5200, 0x9229)
    public static let perFrameFunctionalGroupsSequence = DicomTag(0x5200, 0x9230)
    public static let pixelData = DicomTag(0x7FE0, 0x0010)
}
