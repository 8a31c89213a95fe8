import Foundation
import FuzzSupport
import SliceLabNetwork

/// The DICOMweb multipart/related reader (WADO-RS bodies): the first line up to its end is taken as the
/// Content-Type's boundary parameter, the rest as the body.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMultipart(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Data(bytes: $0, count: size) } ?? Data()
    let newline = bytes.firstIndex(of: 0x0A) ?? bytes.endIndex
    let header = String(decoding: bytes[..<newline], as: UTF8.self)
    let body = newline < bytes.endIndex ? bytes[(newline + 1)...] : Data()
    guard let boundary = MultipartRelated.boundary(contentType: "multipart/related; boundary=" + header) else {
        return 0
    }
    do {
        let parts = try MultipartRelated.parse(Data(body), boundary: boundary, source: "fuzz")
        if parts.contains(where: { $0.data.count > body.count }) { FuzzInput.fail("a part larger than the body") }
    } catch let error as NetworkError {
        guard "\(error)".hasPrefix("fuzz: ") else { FuzzInput.fail("error does not name the source: \(error)") }
    } catch {
        FuzzInput.fail("untyped error \(type(of: error)): \(error)")
    }
    return 0
}
