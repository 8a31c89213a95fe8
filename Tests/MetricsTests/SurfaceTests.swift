import Metrics
import SliceLabSupport
import Testing

/// Surfaces are the mask minus its erosion by the cross, image border as background, in 2-D and 3-D.
@Suite struct SurfaceTests {
    static func bruteForce(_ mask: [Bool], _ shape: [Int]) -> [Bool] {
        let e = shape.count == 3 ? shape : [1] + shape
        func at(_ z: Int, _ y: Int, _ x: Int) -> Bool {
            z >= 0 && z < e[0] && y >= 0 && y < e[1] && x >= 0 && x < e[2] && mask[(z * e[1] + y) * e[2] + x]
        }
        return mask.indices.map { i in
            let (z, y, x) = (i / (e[1] * e[2]), (i / e[2]) % e[1], i % e[2])
            guard mask[i] else { return false }
            var neighbours = at(z, y - 1, x) && at(z, y + 1, x) && at(z, y, x - 1) && at(z, y, x + 1)
            if shape.count == 3 { neighbours = neighbours && at(z - 1, y, x) && at(z + 1, y, x) }
            return !neighbours
        }
    }

    /// The 4×512×512 volume takes the multi-threaded path, the 2-D one the serial path.
    @Test(arguments: [[4, 512, 512], [40, 37]])
    func surfaceEqualsMaskMinusCrossErosion(shape: [Int]) {
        var generator = SeededGenerator(seed: 12)
        let count = shape.reduce(1, *)
        // Blocky random blobs: runs of 1s so interiors exist, and masks touching the border.
        var mask = [Bool](repeating: false, count: count)
        var i = 0
        while i < count {
            let run = 1 + generator.index(below: 40)
            let on = generator.index(below: 3) > 0
            for j in i..<min(count, i + run) { mask[j] = on }
            i += run
        }
        #expect(Surface.of(mask, shape: shape) == Self.bruteForce(mask, shape))
    }

    @Test func aSingleSliceVolumeHasNoInteriorButAFlatImageDoes() {
        let full = [Bool](repeating: true, count: 9)
        #expect(Surface.of(full, shape: [1, 3, 3]).allSatisfy { $0 })
        #expect(Surface.of(full, shape: [3, 3]) == [true, true, true, true, false, true, true, true, true])
    }
}
