import Foundation

/// `multipart/related` bodies (RFC 2387), as WADO-RS returns instances and STOW-RS takes them: parts separated by
/// `--boundary` lines, each with its headers, a blank line and its bytes.
public enum MultipartRelated {
    /// The boundary of a `Content-Type` header value (`multipart/related; type="application/dicom";
    /// boundary=…`), unquoted; nil when it names none or is not multipart/related.
    public static func boundary(contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/related") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == "boundary" else { continue }
            let value =
                pair[1].hasPrefix("\"") && pair[1].hasSuffix("\"") && pair[1].count >= 2
                ? String(pair[1].dropFirst().dropLast()) : pair[1]
            return (1...70).contains(value.count) ? value : nil
        }
        return nil
    }

    /// The parts of `body`: each its headers (names lower-cased) and bytes.
    ///
    /// - Throws: `NetworkError.web` (`source` names the URL) when a boundary is missing, a part has no blank line
    ///   after its headers, or the closing boundary never comes.
    public static func parse(_ body: Data, boundary: String, source: String) throws -> [(
        headers: [String: String], data: Data
    )] {
        let delimiter = Data(("--" + boundary).utf8)
        func fail(_ reason: String) -> NetworkError { .web(url: source, reason: "multipart body: \(reason)") }
        guard var position = body.range(of: delimiter)?.upperBound else { throw fail("no boundary '\(boundary)'") }
        var parts: [(headers: [String: String], data: Data)] = []
        let separator = Data("\r\n\r\n".utf8)
        let crlf = Data("\r\n".utf8)
        while true {
            // After a delimiter: "--" closes the body, else CRLF starts a part.
            if body[position...].starts(with: Data("--".utf8)) { return parts }
            guard body[position...].starts(with: crlf) else { throw fail("a boundary is not followed by a line end") }
            position += 2
            // A part without headers starts with its blank line.
            let headerEnd: Range<Data.Index>
            if body[position...].starts(with: crlf) {
                headerEnd = position..<(position + 2)
            } else if let found = body.range(of: separator, in: position..<body.endIndex) {
                headerEnd = found
            } else {
                throw fail("part \(parts.count + 1) has no blank line after its headers")
            }
            var headers: [String: String] = [:]
            for line in String(decoding: body[position..<headerEnd.lowerBound], as: UTF8.self).components(
                separatedBy: "\r\n")
            {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] =
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let next = crlf + delimiter
            guard let end = body.range(of: next, in: headerEnd.upperBound..<body.endIndex) else {
                throw fail("part \(parts.count + 1) is not closed by a boundary")
            }
            parts.append((headers, body.subdata(in: headerEnd.upperBound..<end.lowerBound)))
            position = end.upperBound
        }
    }

    /// A body of `parts` (each with its content type) and its boundary.
    public static func encode(_ parts: [(contentType: String, data: Data)], boundary: String) -> Data {
        var body = Data()
        for part in parts {
            body += Data("--\(boundary)\r\nContent-Type: \(part.contentType)\r\n\r\n".utf8)
            body += part.data
            body += Data("\r\n".utf8)
        }
        body += Data("--\(boundary)--\r\n".utf8)
        return body
    }
}
