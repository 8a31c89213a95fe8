/// What SliceLab knows about a transfer syntax: its name and which decoder reads it (PS3.5 Section 10, Annex A).
public struct TransferSyntax: Sendable, Equatable {
    public enum Codec: Sendable { case dcmtk, jpeg2000 }

    public let uid: String

    public init(uid: String) { self.uid = uid }

    public static let rleLossless = "1.2.840.10008.1.2.5"

    /// The decoder of encapsulated pixel data; nil for native syntaxes and those SliceLab cannot decode.
    public var codec: Codec? {
        switch uid {
        case Self.rleLossless,
            "1.2.840.10008.1.2.4.50", "1.2.840.10008.1.2.4.51",  // JPEG baseline, extended
            "1.2.840.10008.1.2.4.57", "1.2.840.10008.1.2.4.70",  // JPEG lossless
            "1.2.840.10008.1.2.4.80", "1.2.840.10008.1.2.4.81":  // JPEG-LS lossless, near-lossless
            return .dcmtk
        case "1.2.840.10008.1.2.4.90", "1.2.840.10008.1.2.4.91",  // JPEG 2000 lossless, lossy
            "1.2.840.10008.1.2.4.201", "1.2.840.10008.1.2.4.202", "1.2.840.10008.1.2.4.203":  // HTJ2K
            return .jpeg2000
        default:
            return nil
        }
    }

    /// Whether decoding can lose information (so values are compared with a tolerance).
    public var isLossy: Bool {
        [
            "1.2.840.10008.1.2.4.50", "1.2.840.10008.1.2.4.51", "1.2.840.10008.1.2.4.81",
            "1.2.840.10008.1.2.4.91", "1.2.840.10008.1.2.4.203"
        ].contains(uid)
    }

    /// Explicit VR Big Endian (retired).
    public var isBigEndian: Bool { uid == "1.2.840.10008.1.2.2" }

    /// A readable name, e.g. "JPEG 2000 (lossless)".
    public var name: String {
        switch uid {
        case "1.2.840.10008.1.2": return "Implicit VR Little Endian"
        case "1.2.840.10008.1.2.1": return "Explicit VR Little Endian"
        case "1.2.840.10008.1.2.1.99": return "Deflated Explicit VR Little Endian"
        case "1.2.840.10008.1.2.2": return "Explicit VR Big Endian"
        case "1.2.840.10008.1.2.5": return "RLE Lossless"
        case "1.2.840.10008.1.2.4.50": return "JPEG Baseline"
        case "1.2.840.10008.1.2.4.51": return "JPEG Extended"
        case "1.2.840.10008.1.2.4.57": return "JPEG Lossless"
        case "1.2.840.10008.1.2.4.70": return "JPEG Lossless SV1"
        case "1.2.840.10008.1.2.4.80": return "JPEG-LS Lossless"
        case "1.2.840.10008.1.2.4.81": return "JPEG-LS Near-Lossless"
        case "1.2.840.10008.1.2.4.90": return "JPEG 2000 (lossless)"
        case "1.2.840.10008.1.2.4.91": return "JPEG 2000"
        case "1.2.840.10008.1.2.4.201": return "HTJ2K (lossless)"
        case "1.2.840.10008.1.2.4.202": return "HTJ2K RPCL (lossless)"
        case "1.2.840.10008.1.2.4.203": return "HTJ2K"
        default: return uid
        }
    }
}
