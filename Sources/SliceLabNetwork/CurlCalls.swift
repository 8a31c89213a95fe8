import CCurl
import DICOM
import Foundation

/// One HTTP exchange through libcurl (the only caller of `CCurl`): method, URL, headers and body in; status,
/// headers and a body bounded by `maxBytes` out. TLS peers are verified (libcurl's default, never turned off),
/// against `TLSFiles.trust` when given; its key and certificate are the client's.
struct HTTPResponse {
    var status: Int
    /// Header names lower-cased; the last of a repeated header.
    var headers: [String: String]
    var body: Data
}

/// Bodies and headers gathered by libcurl's callbacks; `limit` stops a body that would exceed it.
private final class Collector {
    var body = Data()
    var headers: [String: String] = [:]
    let limit: Int
    var exceeded = false

    init(limit: Int) { self.limit = limit }
}

private let bodyCallback: cdcw_write_callback = { data, size, count, context in
    let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
    let bytes = size * count
    guard collector.body.count + bytes <= collector.limit else {
        collector.exceeded = true
        return 0
    }
    if let data { collector.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: bytes) }
    return bytes
}

private let headerCallback: cdcw_write_callback = { data, size, count, context in
    let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
    let bytes = size * count
    if let data,
        let line = String(
            bytes: UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: bytes),
            encoding: .isoLatin1),
        let colon = line.firstIndex(of: ":")
    {
        collector.headers[line[..<colon].lowercased()] =
            line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
    }
    return bytes
}

private let curlReady: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

/// Performs one request. Rests on `curl_easy_perform`.
///
/// - Throws: `NetworkError.web` naming the URL: libcurl's error (unreachable, TLS, timeout) or a body over
///   `maxBytes`.
func performHTTP(
    method: String, url: URL, headers: [String], body: Data?, timeoutSeconds: Int, tls: TLSFiles?, maxBytes: Int
) throws -> HTTPResponse {
    guard curlReady, let curl = curl_easy_init() else {
        throw NetworkError.web(url: url.absoluteString, reason: "libcurl could not be initialised")
    }
    defer { curl_easy_cleanup(curl) }
    let collector = Collector(limit: maxBytes)
    let context = Unmanaged.passUnretained(collector).toOpaque()
    var list: UnsafeMutablePointer<curl_slist>?
    for header in headers { list = curl_slist_append(list, header) }
    defer { curl_slist_free_all(list) }
    var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    let payload = body ?? Data()
    let code: CURLcode = payload.withUnsafeBytes { raw in
        errorBuffer.withUnsafeMutableBufferPointer { errors in
            _ = cdcw_setopt_string(curl, CURLOPT_URL, url.absoluteString)
            _ = cdcw_setopt_pointer(curl, CURLOPT_HTTPHEADER, list)
            _ = cdcw_setopt_long(curl, CURLOPT_TIMEOUT, timeoutSeconds)
            _ = cdcw_setopt_long(curl, CURLOPT_CONNECTTIMEOUT, min(timeoutSeconds, 30))
            _ = cdcw_setopt_long(curl, CURLOPT_NOSIGNAL, 1)
            _ = cdcw_setopt_long(curl, CURLOPT_FOLLOWLOCATION, 0)
            _ = cdcw_setopt_pointer(curl, CURLOPT_ERRORBUFFER, errors.baseAddress)
            _ = cdcw_setopt_write(curl, bodyCallback)
            _ = cdcw_setopt_pointer(curl, CURLOPT_WRITEDATA, context)
            _ = cdcw_setopt_header(curl, headerCallback)
            _ = cdcw_setopt_pointer(curl, CURLOPT_HEADERDATA, context)
            _ = cdcw_setopt_string(curl, CURLOPT_CUSTOMREQUEST, method)
            if let trust = tls?.trust { _ = cdcw_setopt_string(curl, CURLOPT_CAINFO, trust) }
            if let key = tls?.key, let certificate = tls?.certificate {
                _ = cdcw_setopt_string(curl, CURLOPT_SSLKEY, key)
                _ = cdcw_setopt_string(curl, CURLOPT_SSLCERT, certificate)
            }
            if body != nil {
                _ = cdcw_setopt_pointer(curl, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
                _ = cdcw_setopt_offset(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(payload.count))
            }
            return curl_easy_perform(curl)
        }
    }
    if collector.exceeded {
        throw NetworkError.web(url: url.absoluteString, reason: "the response exceeds \(maxBytes) bytes")
    }
    guard code == CURLE_OK else {
        let detail = String(nulTerminated: errorBuffer)
        throw NetworkError.web(
            url: url.absoluteString, reason: detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
    }
    var status = 0
    _ = cdcw_response_code(curl, &status)
    return HTTPResponse(status: status, headers: collector.headers, body: collector.body)
}
