/// A DICOM attribute tag (group, element), e.g. `DICOMTag(0x0028, 0x0010)` for Rows.
public struct DICOMTag: Hashable, Sendable, CustomStringConvertible {
    public let group: UInt16
    public let element: UInt16

    public init(_ group: UInt16, _ element: UInt16) {
        self.group = group
        self.element = element
    }

    /// `gggg,eeee` in hexadecimal (as dcmnet's query results name tags); nil for anything else.
    public init?(text: String) {
        let parts = text.split(separator: ",")
        guard parts.count == 2, parts.allSatisfy({ $0.count == 4 }), let group = UInt16(parts[0], radix: 16),
            let element = UInt16(parts[1], radix: 16)
        else { return nil }
        (self.group, self.element) = (group, element)
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
extension DICOMTag {
    public static let transferSyntaxUID = DICOMTag(0x0002, 0x0010)
    public static let sopClassUID = DICOMTag(0x0008, 0x0016)
    public static let sopInstanceUID = DICOMTag(0x0008, 0x0018)
    public static let studyDate = DICOMTag(0x0008, 0x0020)
    public static let modality = DICOMTag(0x0008, 0x0060)
    public static let manufacturer = DICOMTag(0x0008, 0x0070)
    public static let studyDescription = DICOMTag(0x0008, 0x1030)
    public static let studyTime = DICOMTag(0x0008, 0x0030)
    public static let accessionNumber = DICOMTag(0x0008, 0x0050)
    public static let modalitiesInStudy = DICOMTag(0x0008, 0x0061)
    public static let studyID = DICOMTag(0x0020, 0x0010)
    public static let numberOfStudyRelatedSeries = DICOMTag(0x0020, 0x1206)
    public static let numberOfStudyRelatedInstances = DICOMTag(0x0020, 0x1208)
    public static let numberOfSeriesRelatedInstances = DICOMTag(0x0020, 0x1209)
    public static let seriesDescription = DICOMTag(0x0008, 0x103E)
    public static let referencedSeriesSequence = DICOMTag(0x0008, 0x1115)
    public static let referencedInstanceSequence = DICOMTag(0x0008, 0x114A)
    public static let referencedSOPClassUID = DICOMTag(0x0008, 0x1150)
    public static let referencedSOPInstanceUID = DICOMTag(0x0008, 0x1155)
    public static let referencedFrameNumber = DICOMTag(0x0008, 0x1160)
    public static let sourceImageSequence = DICOMTag(0x0008, 0x2112)
    public static let derivationImageSequence = DICOMTag(0x0008, 0x9124)
    public static let patientName = DICOMTag(0x0010, 0x0010)
    public static let patientID = DICOMTag(0x0010, 0x0020)
    public static let sliceThickness = DICOMTag(0x0018, 0x0050)
    public static let spacingBetweenSlices = DICOMTag(0x0018, 0x0088)
    public static let studyInstanceUID = DICOMTag(0x0020, 0x000D)
    public static let seriesInstanceUID = DICOMTag(0x0020, 0x000E)
    public static let seriesNumber = DICOMTag(0x0020, 0x0011)
    public static let instanceNumber = DICOMTag(0x0020, 0x0013)
    public static let imagePositionPatient = DICOMTag(0x0020, 0x0032)
    public static let imageOrientationPatient = DICOMTag(0x0020, 0x0037)
    public static let frameOfReferenceUID = DICOMTag(0x0020, 0x0052)
    public static let dimensionIndexValues = DICOMTag(0x0020, 0x9157)
    public static let planePositionSequence = DICOMTag(0x0020, 0x9113)
    public static let planeOrientationSequence = DICOMTag(0x0020, 0x9116)
    public static let samplesPerPixel = DICOMTag(0x0028, 0x0002)
    public static let photometricInterpretation = DICOMTag(0x0028, 0x0004)
    public static let planarConfiguration = DICOMTag(0x0028, 0x0006)
    public static let numberOfFrames = DICOMTag(0x0028, 0x0008)
    public static let rows = DICOMTag(0x0028, 0x0010)
    public static let columns = DICOMTag(0x0028, 0x0011)
    public static let pixelSpacing = DICOMTag(0x0028, 0x0030)
    public static let bitsAllocated = DICOMTag(0x0028, 0x0100)
    public static let bitsStored = DICOMTag(0x0028, 0x0101)
    public static let highBit = DICOMTag(0x0028, 0x0102)
    public static let pixelRepresentation = DICOMTag(0x0028, 0x0103)
    public static let windowCenter = DICOMTag(0x0028, 0x1050)
    public static let windowWidth = DICOMTag(0x0028, 0x1051)
    public static let rescaleIntercept = DICOMTag(0x0028, 0x1052)
    public static let rescaleSlope = DICOMTag(0x0028, 0x1053)
    public static let rescaleType = DICOMTag(0x0028, 0x1054)
    public static let voiLUTFunction = DICOMTag(0x0028, 0x1056)
    public static let redPaletteDescriptor = DICOMTag(0x0028, 0x1101)
    public static let greenPaletteDescriptor = DICOMTag(0x0028, 0x1102)
    public static let bluePaletteDescriptor = DICOMTag(0x0028, 0x1103)
    public static let redPaletteData = DICOMTag(0x0028, 0x1201)
    public static let greenPaletteData = DICOMTag(0x0028, 0x1202)
    public static let bluePaletteData = DICOMTag(0x0028, 0x1203)
    public static let segmentedRedPaletteData = DICOMTag(0x0028, 0x1221)
    public static let segmentedGreenPaletteData = DICOMTag(0x0028, 0x1222)
    public static let segmentedBluePaletteData = DICOMTag(0x0028, 0x1223)
    public static let lutDescriptor = DICOMTag(0x0028, 0x3002)
    public static let lutData = DICOMTag(0x0028, 0x3006)
    public static let modalityLUTSequence = DICOMTag(0x0028, 0x3000)
    public static let voiLUTSequence = DICOMTag(0x0028, 0x3010)
    public static let pixelMeasuresSequence = DICOMTag(0x0028, 0x9110)
    public static let frameVOILUTSequence = DICOMTag(0x0028, 0x9132)
    public static let pixelValueTransformationSequence = DICOMTag(0x0028, 0x9145)
    public static let segmentSequence = DICOMTag(0x0062, 0x0002)
    public static let segmentedPropertyCategoryCodeSequence = DICOMTag(0x0062, 0x0003)
    public static let segmentNumber = DICOMTag(0x0062, 0x0004)
    public static let segmentLabel = DICOMTag(0x0062, 0x0005)
    public static let segmentationType = DICOMTag(0x0062, 0x0001)
    public static let maximumFractionalValue = DICOMTag(0x0062, 0x000E)
    public static let segmentIdentificationSequence = DICOMTag(0x0062, 0x000A)
    public static let referencedSegmentNumber = DICOMTag(0x0062, 0x000B)
    public static let sharedFunctionalGroupsSequence = DICOMTag(0x5200, 0x9229)
    public static let perFrameFunctionalGroupsSequence = DICOMTag(0x5200, 0x9230)
    public static let pixelData = DICOMTag(0x7FE0, 0x0010)
}
