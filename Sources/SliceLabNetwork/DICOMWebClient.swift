import DICOM
import Foundation

/// A DICOMweb service (PS3.18): QIDO-RS searches, WADO-RS retrieval of instances, STOW-RS storage, over
/// `performHTTP`.
struct DICOMWebClient {
    let base: URL
    let connection: Connection

    /// The largest response read: a query's JSON, or one retrieval's multipart body.
    static let maxQueryBytes = 64 << 20
    static let maxRetrieveBytes = 2 << 30

    /// `base` + `path` with `query` parameters.
    func url(_ path: String, _ query: [(String, String)] = []) -> URL {
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
        components.path = (components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path) + path
        if !query.isEmpty { components.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        return components.url!
    }

    func request(_ method: String, _ url: URL, headers: [String], body: Data? = nil, maxBytes: Int) throws
        -> HTTPResponse
    {
        let response = try performHTTP(
            method: method, url: url, headers: headers + (connection.credentials.map { [$0.header] } ?? []),
            body: body, timeoutSeconds: connection.timeoutSeconds, tls: connection.tls, maxBytes: maxBytes)
        guard (200..<300).contains(response.status) else {
            let detail = String(decoding: response.body.prefix(300), as: UTF8.self)
                .replacingOccurrences(of: "\n", with: " ")
            throw NetworkError.web(url: url.absoluteString, reason: "HTTP \(response.status) \(detail)")
        }
        return response
    }

    /// QIDO-RS: the matches of `path` with `filters` (keyword = value) and the return keys asked for, as keyword
    /// → value (multiple values joined by backslashes, person names alphabetic).
    func search(_ path: String, filters: [(String, String)], returnKeys: [(String, DICOMTag)]) throws -> [[String:
        String]]
    {
        let include = returnKeys.map { ("includefield", String(format: "%04X%04X", $0.1.group, $0.1.element)) }
        let target = url(path, filters + include)
        let response = try request(
            "GET", target, headers: ["Accept: application/dicom+json"], maxBytes: Self.maxQueryBytes)
        if response.status == 204 || response.body.isEmpty { return [] }
        guard let objects = try? JSONSerialization.jsonObject(with: response.body) as? [[String: Any]] else {
            throw NetworkError.web(url: target.absoluteString, reason: "the search result is not a DICOM JSON array")
        }
        return objects.map { object in
            var match: [String: String] = [:]
            for (keyword, tag) in returnKeys {
                let key = String(format: "%04X%04X", tag.group, tag.element)
                guard let attribute = object[key] as? [String: Any], let values = attribute["Value"] as? [Any] else {
                    continue
                }
                match[keyword] = values.map { value -> String in
                    if let name = value as? [String: Any] { return name["Alphabetic"] as? String ?? "" }
                    return "\(value)"
                }.joined(separator: "\\")
            }
            return match
        }
    }

    /// WADO-RS: the instances of a study or series, as Part 10 files.
    func retrieve(_ path: String) throws -> [Data] {
        let target = url(path)
        var response: HTTPResponse
        do {
            response = try request(
                "GET", target, headers: [#"Accept: multipart/related; type="application/dicom"; transfer-syntax=*"#],
                maxBytes: Self.maxRetrieveBytes)
        } catch NetworkError.web(_, let reason) where reason.hasPrefix("HTTP 406") || reason.hasPrefix("HTTP 400") {
            // A service that cannot send the stored transfer syntaxes sends its default one.
            response = try request(
                "GET", target, headers: [#"Accept: multipart/related; type="application/dicom""#],
                maxBytes: Self.maxRetrieveBytes)
        }
        guard let boundary = MultipartRelated.boundary(contentType: response.headers["content-type"] ?? "") else {
            throw NetworkError.web(
                url: target.absoluteString,
                reason: "expected a multipart/related body, got '\(response.headers["content-type"] ?? "none")'")
        }
        return try MultipartRelated.parse(response.body, boundary: boundary, source: target.absoluteString).map(\.data)
    }

    /// STOW-RS: stores Part 10 files in one request; per SOP Instance UID, nil when stored, else the failure.
    func store(_ files: [(sopInstanceUID: String, data: Data)]) throws -> [String: String?] {
        let boundary = "SliceLab-\(UUID().uuidString)"
        let body = MultipartRelated.encode(files.map { ("application/dicom", $0.data) }, boundary: boundary)
        let target = url("/studies")
        let response = try request(
            "POST", target,
            headers: [
                #"Content-Type: multipart/related; type="application/dicom"; boundary="# + boundary,
                "Accept: application/dicom+json"
            ], body: body, maxBytes: Self.maxQueryBytes)
        var outcome: [String: String?] = [:]
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] ?? [:]
        func items(_ tag: String) -> [[String: Any]] {
            ((object[tag] as? [String: Any])?["Value"] as? [[String: Any]]) ?? []
        }
        func uid(_ item: [String: Any]) -> String? {
            ((item["00081155"] as? [String: Any])?["Value"] as? [Any])?.first as? String
        }
        for item in items("00081199") { if let uid = uid(item) { outcome[uid] = .some(nil) } }
        for item in items("00081198") {
            let reason = ((item["00081197"] as? [String: Any])?["Value"] as? [Any])?.first.map {
                "failure reason \($0)"
            }
            if let uid = uid(item) { outcome[uid] = .some(reason ?? "failed") }
        }
        // A 200 without a per-instance list: every instance stored.
        if outcome.isEmpty && response.status == 200 {
            for file in files { outcome[file.sopInstanceUID] = .some(nil) }
        }
        return outcome
    }
}
