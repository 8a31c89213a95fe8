extension String {
    /// The text of a C character buffer (a message or name a C library wrote into it) up to its first NUL, or all of
    /// it when there is none; bytes that are not UTF-8 are repaired, as `String(cString:)` does.
    public init(nulTerminated buffer: [CChar]) {
        let end = buffer.firstIndex(of: 0) ?? buffer.endIndex
        self.init(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
