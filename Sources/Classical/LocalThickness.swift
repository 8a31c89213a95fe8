/// The local thickness of a structure in one slice (Hildebrand & Rüegsegger 1997, "A new method for the
/// model-independent assessment of thickness in three-dimensional images", the measure BoneJ computes): at each
/// pixel of a mask, the diameter of the largest disc that lies inside the mask and covers the pixel. A
/// one-pixel line measures 1, a strip w pixels wide about w, a disc its diameter: what an area-based size
/// misses in a long thin structure such as the cortical ribbon.
///
/// Discrete rules (`Datasets/goldens/fingerprint_goldens.py` computes the same with SciPy):
/// - d(p): the Euclidean distance from pixel p of the mask to the nearest pixel outside it, the slice's outside
///   counting as outside (exact squared distances, Felzenszwalb & Huttenlocher 2012).
/// - A disc centred on pixel c of radius d(c) covers the pixels q with |q − c|² < d(c)²; its diameter counts as
///   2·d(c) − 1 pixels (so a strip of odd width w measures w).
/// - The discs painted are those of ridge pixels (d² at least that of each of the 8 neighbours) and of every
///   pixel itself; local thickness is the largest diameter covering the pixel.
/// - Thickness above `cap` is not resolved: a pixel covered by a disc of radius above cap/2 measures
///   `.infinity`. That region is found without painting its large discs: it is the set of mask pixels closer
///   than r = cap/2 to a pixel whose own distance is at least r (the opening by a disc of radius r), so the
///   cost stays bounded by the ridge pixels times (cap + 1)².
public enum LocalThickness {
    /// The thickness resolved; beyond it `.infinity`. The plan's rules never need more: 2 × 4 cells at
    /// stride 16 is 128 pixels.
    public static let cap = 128.0

    /// Local thickness in pixels of every pixel of `mask` [height, width] (`nil` outside the mask).
    public static func measure(_ mask: [Bool], height: Int, width: Int, cap: Double = cap) -> [Double?] {
        let distance = squaredDistance(toNearest: mask.map { !$0 }, height: height, width: width, outsideIsSet: true)
        let radius = cap / 2
        let wide = distance.map { Double($0) >= radius * radius }
        let toWide =
            wide.contains(true)
            ? squaredDistance(toNearest: wide, height: height, width: width, outsideIsSet: false) : nil
        var thickness = [Double?](repeating: nil, count: mask.count)
        for p in mask.indices where mask[p] {
            if let toWide, Double(toWide[p]) < radius * radius {
                thickness[p] = .infinity
            } else {
                thickness[p] = 2 * Double(distance[p]).squareRoot() - 1
            }
        }
        for y in 0..<height {
            for x in 0..<width {
                let p = y * width + x
                guard mask[p], thickness[p] != .infinity, isRidge(distance, y: y, x: x, height: height, width: width)
                else { continue }
                let squared = distance[p]
                let diameter = 2 * Double(squared).squareRoot() - 1
                let reach = Int(Double(squared).squareRoot().rounded(.up))
                for qy in max(0, y - reach)...min(height - 1, y + reach) {
                    let dy = qy - y
                    for qx in max(0, x - reach)...min(width - 1, x + reach) {
                        let dx = qx - x
                        let q = qy * width + qx
                        if dy * dy + dx * dx < squared, let current = thickness[q], current < diameter {
                            thickness[q] = diameter
                        }
                    }
                }
            }
        }
        return thickness
    }

    /// Whether pixel (y, x) has a squared distance at least that of each of its 8 neighbours in the slice.
    static func isRidge(_ distance: [Int], y: Int, x: Int, height: Int, width: Int) -> Bool {
        let centre = distance[y * width + x]
        for ny in max(0, y - 1)...min(height - 1, y + 1) {
            for nx in max(0, x - 1)...min(width - 1, x + 1) where distance[ny * width + nx] > centre {
                return false
            }
        }
        return true
    }

    /// The squared Euclidean distance from every pixel to the nearest pixel of `set` (0 on the set), by the
    /// exact separable transform of Felzenszwalb & Huttenlocher: columns, then rows. With `outsideIsSet`, the
    /// pixels just beyond the slice's edges belong to the set. `Int.max / 4` where the set is empty.
    static func squaredDistance(toNearest set: [Bool], height: Int, width: Int, outsideIsSet: Bool) -> [Int] {
        let infinity = Int.max / 4
        // Padding by one pixel on each side puts the outside into the set when asked.
        let (h, w) = outsideIsSet ? (height + 2, width + 2) : (height, width)
        let offset = outsideIsSet ? 1 : 0
        var grid = [Int](repeating: outsideIsSet ? 0 : infinity, count: h * w)
        for y in 0..<height {
            for x in 0..<width {
                grid[(y + offset) * w + x + offset] = set[y * width + x] ? 0 : infinity
            }
        }
        var line = [Int](repeating: 0, count: max(h, w))
        var out = line
        for x in 0..<w {
            for y in 0..<h { line[y] = grid[y * w + x] }
            lowerEnvelope(line, count: h, into: &out, infinity: infinity)
            for y in 0..<h { grid[y * w + x] = out[y] }
        }
        for y in 0..<h {
            for x in 0..<w { line[x] = grid[y * w + x] }
            lowerEnvelope(line, count: w, into: &out, infinity: infinity)
            for x in 0..<w { grid[y * w + x] = out[x] }
        }
        guard outsideIsSet else { return grid }
        var result = [Int](repeating: 0, count: height * width)
        for y in 0..<height {
            for x in 0..<width { result[y * width + x] = grid[(y + 1) * w + x + 1] }
        }
        return result
    }

    /// The 1-D squared distance transform min over q of (f(q) + (p − q)²), by the lower envelope of parabolas.
    private static func lowerEnvelope(_ f: [Int], count n: Int, into out: inout [Int], infinity: Int) {
        var vertices = [Int](repeating: 0, count: n)
        var boundaries = [Double](repeating: 0, count: n + 1)
        var k = -1
        for q in 0..<n where f[q] < infinity {
            while k >= 0 {
                let v = vertices[k]
                let s = Double((f[q] + q * q) - (f[v] + v * v)) / Double(2 * (q - v))
                if s <= boundaries[k] {
                    k -= 1
                } else {
                    k += 1
                    vertices[k] = q
                    boundaries[k] = s
                    break
                }
            }
            if k < 0 {
                k = 0
                vertices[0] = q
                boundaries[0] = -.infinity
            }
            boundaries[k + 1] = .infinity
        }
        guard k >= 0 else {
            for p in 0..<n { out[p] = infinity }
            return
        }
        var j = 0
        for p in 0..<n {
            while boundaries[j + 1] < Double(p) { j += 1 }
            let v = vertices[j]
            out[p] = (p - v) * (p - v) + f[v]
        }
    }
}
