import SliceLabSupport

/// Surface voxels of a binary mask: the mask XOR its erosion by the cross (connectivity 1), with voxels outside
/// the image counting as background, as `scipy.ndimage.binary_erosion` (MONAI `get_mask_edges`, medpy
/// `__surface_distances`).
public enum Surface {
    /// The surface of `mask` over `shape` (2 or 3 axes, row-major); slices in parallel for large volumes.
    public static func of(_ mask: [Bool], shape: [Int]) -> [Bool] {
        let extents = shape.count == 3 ? shape : [1] + shape
        let (slices, rows, columns) = (extents[0], extents[1], extents[2])
        let checkSlices = shape.count == 3
        let plane = rows * columns
        var surface = [Bool](repeating: false, count: mask.count)
        mask.withUnsafeBufferPointer { m in
            surface.withUnsafeMutableBufferPointer { buffer in
                let s = buffer
                func scan(slice z: Int) {
                    for y in 0..<rows {
                        let rowBase = z * plane + y * columns
                        for x in 0..<columns where m[rowBase + x] {
                            let i = rowBase + x
                            var interior =
                                x > 0 && x < columns - 1 && m[i - 1] && m[i + 1]
                                && y > 0 && y < rows - 1 && m[i - columns] && m[i + columns]
                            if interior && checkSlices {
                                interior = z > 0 && z < slices - 1 && m[i - plane] && m[i + plane]
                            }
                            s[i] = !interior
                        }
                    }
                }
                if slices >= 4 && mask.count >= 1 << 20 {
                    Parallel.forEach(slices) { scan(slice: $0) }
                } else {
                    for z in 0..<slices { scan(slice: z) }
                }
            }
        }
        return surface
    }
}
