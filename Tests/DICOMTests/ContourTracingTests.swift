import Testing

@testable import DICOM

/// Marching squares on pixel centres: filled back by the even-odd rule the contours give the mask exactly, on
/// seeded random masks with holes, diagonal touches and pixels on the border; the contours have no collinear
/// vertex and do not cross themselves or each other.
struct ContourTracingTests {
    @Test(arguments: 0..<40)
    func contoursFillBackToTheMask(seed: Int) {
        var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        let (rows, columns) = (Int(next() % 12) + 1, Int(next() % 12) + 1)
        let density = Double(next() % 90 + 5) / 100
        let mask = (0..<rows * columns).map { _ in Double(next() % 1000) / 1000 < density ? UInt8(1) : 0 }
        let contours = ContourTracing.contours(mask, rows: rows, columns: columns)
        var filled = [UInt8](repeating: 0, count: mask.count)
        for contour in contours {
            StructureSet.fillEvenOdd(contour, rows: rows, columns: columns) { filled[$0] ^= 1 }
        }
        #expect(filled == mask, "seed \(seed): \(rows)×\(columns)")
        var edges: [((Double, Double), (Double, Double))] = []
        for contour in contours {
            #expect(contour.count >= 4, "a contour around pixel centres has at least four vertices")
            for (i, point) in contour.enumerated() {
                let (previous, next) = (
                    contour[(i + contour.count - 1) % contour.count], contour[(i + 1) % contour.count]
                )
                let cross = (point.x - previous.x) * (next.y - point.y) - (point.y - previous.y) * (next.x - point.x)
                #expect(cross != 0, "seed \(seed): collinear vertex \(point)")
                edges.append(((point.x, point.y), (next.x, next.y)))
            }
        }
        // No two edges cross or overlap (they may only share an end).
        func orientation(_ a: (Double, Double), _ b: (Double, Double), _ c: (Double, Double)) -> Double {
            (b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0)
        }
        for i in edges.indices {
            for j in edges.indices where j > i {
                let (a, b) = edges[i]
                let (c, d) = edges[j]
                let shared = [a, b].contains { p in [c, d].contains { $0 == p } }
                guard !shared else { continue }
                let crosses =
                    orientation(a, b, c) * orientation(a, b, d) < 0 && orientation(c, d, a) * orientation(c, d, b) < 0
                #expect(!crosses, "seed \(seed): edges \(edges[i]) and \(edges[j]) cross")
            }
        }
    }
}
