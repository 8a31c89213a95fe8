/// Closed contours of a binary mask by marching squares on pixel centres: the iso-line at 0.5 of the mask
/// sampled at the centres, so every vertex is the midpoint between a pixel inside and one outside. Diagonal
/// neighbours stay apart (the inside is 4-connected), so the contours are simple and none crosses another;
/// holes come out as contours of their own; collinear vertices are dropped. Filled back by pixel centres with
/// the even-odd rule (`StructureSet.mask`), the contours give the mask exactly.
public enum ContourTracing {
    /// The contours of `mask` ([rows, columns] row-major, non-zero inside), each a closed polygon of (column,
    /// row) pixel coordinates without its first vertex repeated, in a deterministic order.
    public static func contours(_ mask: [UInt8], rows: Int, columns: Int) -> [[(x: Double, y: Double)]] {
        precondition(mask.count == rows * columns)
        func inside(_ r: Int, _ c: Int) -> Bool {
            r >= 0 && r < rows && c >= 0 && c < columns && mask[r * columns + c] != 0
        }
        // Vertices in doubled coordinates (2x, 2y), so edge midpoints are integers.
        struct Point: Hashable { var x: Int, y: Int }
        var segments: [(Point, Point)] = []
        for r in -1..<rows {
            for c in -1..<columns {
                let (tl, tr, br, bl) = (inside(r, c), inside(r, c + 1), inside(r + 1, c + 1), inside(r + 1, c))
                let top = Point(x: 2 * c + 1, y: 2 * r)
                let bottom = Point(x: 2 * c + 1, y: 2 * r + 2)
                let left = Point(x: 2 * c, y: 2 * r + 1)
                let right = Point(x: 2 * c + 2, y: 2 * r + 1)
                switch (tl, tr, br, bl) {
                case (true, false, false, false), (false, true, true, true): segments.append((left, top))
                case (false, true, false, false), (true, false, true, true): segments.append((top, right))
                case (false, false, true, false), (true, true, false, true): segments.append((right, bottom))
                case (false, false, false, true), (true, true, true, false): segments.append((bottom, left))
                case (true, true, false, false), (false, false, true, true): segments.append((left, right))
                case (false, true, true, false), (true, false, false, true): segments.append((top, bottom))
                case (true, false, true, false):  // diagonal: each inside corner cut off on its own
                    segments += [(left, top), (right, bottom)]
                case (false, true, false, true):
                    segments += [(top, right), (bottom, left)]
                default: break
                }
            }
        }
        var ends: [Point: [Int]] = [:]
        for (index, segment) in segments.enumerated() {
            ends[segment.0, default: []].append(index)
            ends[segment.1, default: []].append(index)
        }
        var used = [Bool](repeating: false, count: segments.count)
        var loops: [[(x: Double, y: Double)]] = []
        for start in segments.indices where !used[start] {
            used[start] = true
            var points = [segments[start].0]
            var current = segments[start].1
            while current != points[0] {
                points.append(current)
                guard let next = ends[current]?.first(where: { !used[$0] }) else { break }
                used[next] = true
                current = segments[next].0 == current ? segments[next].1 : segments[next].0
            }
            // Drop collinear vertices (exact in doubled integer coordinates).
            var simplified = points
            var changed = true
            while changed && simplified.count > 3 {
                changed = false
                var kept: [Point] = []
                for (i, point) in simplified.enumerated() {
                    let previous = kept.last ?? simplified[(i + simplified.count - 1) % simplified.count]
                    let next = simplified[(i + 1) % simplified.count]
                    let cross =
                        (point.x - previous.x) * (next.y - point.y) - (point.y - previous.y) * (next.x - point.x)
                    if cross == 0 { changed = true } else { kept.append(point) }
                }
                simplified = kept
            }
            loops.append(simplified.map { (Double($0.x) / 2, Double($0.y) / 2) })
        }
        return loops
    }
}
