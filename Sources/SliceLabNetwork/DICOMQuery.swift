import DICOM
import Foundation

/// `slicelab query`: studies or series of a remote matching a few keys (C-FIND, study root).
public struct DICOMQuery: Sendable {
    public enum Level: String, Sendable, CaseIterable { case study, series }

    public var level: Level = .study
    public var patientID: String?
    public var modality: String?
    /// `YYYYMMDD-YYYYMMDD`, either side open (DICOM date range matching).
    public var studyDate: String?
    /// For series: the study whose series are listed.
    public var studyInstanceUID: String?
    public var seriesInstanceUID: String?

    public init(level: Level = .study) { self.level = level }

    /// One match: its attributes by keyword (`StudyInstanceUID`, `PatientID`, …), as the peer returned them.
    public typealias Match = [String: String]

    /// The attributes asked for at each level, by keyword, with their tags.
    static func returnKeys(_ level: Level) -> [(String, DICOMTag)] {
        let study: [(String, DICOMTag)] = [
            ("StudyInstanceUID", .studyInstanceUID), ("PatientID", .patientID), ("PatientName", .patientName),
            ("StudyDate", .studyDate), ("StudyDescription", .studyDescription), ("AccessionNumber", .accessionNumber),
            ("ModalitiesInStudy", .modalitiesInStudy), ("NumberOfStudyRelatedSeries", .numberOfStudyRelatedSeries),
            ("NumberOfStudyRelatedInstances", .numberOfStudyRelatedInstances)
        ]
        let series: [(String, DICOMTag)] = [
            ("StudyInstanceUID", .studyInstanceUID), ("SeriesInstanceUID", .seriesInstanceUID),
            ("Modality", .modality), ("SeriesNumber", .seriesNumber), ("SeriesDescription", .seriesDescription),
            ("NumberOfSeriesRelatedInstances", .numberOfSeriesRelatedInstances)
        ]
        return level == .study ? study : series
    }

    /// The query's keys: every return key empty, then the filters given.
    func keys() -> [(DICOMTag, String)] {
        var values = Dictionary(uniqueKeysWithValues: Self.returnKeys(level).map { ($0.1, "") })
        if let patientID { values[.patientID] = patientID }
        if let studyDate { values[.studyDate] = studyDate }
        if let studyInstanceUID { values[.studyInstanceUID] = studyInstanceUID }
        if let seriesInstanceUID { values[.seriesInstanceUID] = seriesInstanceUID }
        if let modality { values[level == .study ? .modalitiesInStudy : .modality] = modality }
        return values.sorted { ($0.key.group, $0.key.element) < ($1.key.group, $1.key.element) }.map {
            ($0.key, $0.value)
        }
    }

    /// The matches at `remote`, sorted by study (and series) UID.
    ///
    /// - Throws: `DICOMError.network` naming the peer (C-FIND), `NetworkError.web` naming the URL (QIDO-RS).
    public func run(on remote: Remote, using connection: Connection) throws -> [Match] {
        let matches: [Match]
        switch remote {
        case .dimse:
            let association = try connection.association(with: remote, for: .find)
            let names = Dictionary(uniqueKeysWithValues: Self.returnKeys(level).map { ($0.1, $0.0) })
            matches = try association.find(level: level.rawValue.uppercased(), keys: keys()).map { attributes in
                Dictionary(uniqueKeysWithValues: attributes.compactMap { tag, value in names[tag].map { ($0, value) } })
            }
        case .web(let url):
            let client = connection.web(url)
            var filters: [(String, String)] = []
            if let patientID { filters.append(("PatientID", patientID)) }
            if let studyDate { filters.append(("StudyDate", studyDate)) }
            if let modality { filters.append((level == .study ? "ModalitiesInStudy" : "Modality", modality)) }
            if let seriesInstanceUID { filters.append(("SeriesInstanceUID", seriesInstanceUID)) }
            var path = "/studies"
            if level == .series {
                path = studyInstanceUID.map { "/studies/\($0)/series" } ?? "/series"
            } else if let studyInstanceUID {
                filters.append(("StudyInstanceUID", studyInstanceUID))
            }
            matches = try client.search(path, filters: filters, returnKeys: Self.returnKeys(level)).map { match in
                // A study's series list may omit the study UID it lies under.
                var match = match
                if level == .series, match["StudyInstanceUID"] == nil, let studyInstanceUID {
                    match["StudyInstanceUID"] = studyInstanceUID
                }
                return match
            }
        }
        return matches.sorted {
            ($0["StudyInstanceUID"] ?? "", $0["SeriesInstanceUID"] ?? "")
                < ($1["StudyInstanceUID"] ?? "", $1["SeriesInstanceUID"] ?? "")
        }
    }
}
