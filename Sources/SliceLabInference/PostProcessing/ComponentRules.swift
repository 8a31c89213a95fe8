import Classical
import SliceLabIO
import SliceLabSupport

/// nnU-Net's rule: per foreground class, keep only its largest face-connected component (4- in 2-D,
/// 6-connected in 3-D); the class's other components become background (0). Applies to the context's
/// `ruleClasses`, or to every foreground class.
/// Reference: Isensee et al., "nnU-Net", Nature Methods 2021, post-processing
/// (`remove_all_but_the_largest_connected_component`).
struct LargestComponent: PostProcessingStep {
    static let name = "largest-component"

    static func apply(_ map: LabelGrid<Int32>, context: PostProcessingContext) throws -> LabelGrid<Int32> {
        let components = try ComponentTable(map)
        var largest: [Int32: Int] = [:]  // class → region id of its largest component (first on ties)
        for region in 1..<components.sizes.count {
            let label = components.classOf[region]
            guard label > 0, context.applies(to: label) else { continue }
            if let best = largest[label], components.sizes[best] >= components.sizes[region] { continue }
            largest[label] = region
        }
        var result = map
        for pixel in 0..<map.labels.count {
            let label = map.labels[pixel]
            if let keep = largest[label], Int(components.regions[pixel]) != keep { result.labels[pixel] = 0 }
        }
        return result
    }
}

/// Fills holes per foreground class: a face-connected component of background (0) that touches no edge of the
/// grid and borders only that class becomes that class. Holes holding another foreground class are left alone.
struct FillHoles: PostProcessingStep {
    static let name = "fill-holes"

    static func apply(_ map: LabelGrid<Int32>, context: PostProcessingContext) throws -> LabelGrid<Int32> {
        let components = try ComponentTable(map)
        var result = map
        for pixel in 0..<map.labels.count where map.labels[pixel] == 0 {
            let region = Int(components.regions[pixel])
            let fill = components.soleNeighbour[region]
            if fill > 0, !components.touchesEdge[region], context.applies(to: fill) { result.labels[pixel] = fill }
        }
        return result
    }
}

extension PostProcessingContext {
    /// Whether the component rules apply to class `label`.
    func applies(to label: Int32) -> Bool { ruleClasses?.contains(Int(label)) ?? true }
}

/// The face-connected components of a class map with, per region (ids from 1), its class, size, whether it
/// touches the grid's edge, and the one class that borders it (−1 for none yet, −2 for several).
private struct ComponentTable {
    let regions: [Int32]
    var classOf: [Int32]
    var sizes: [Int]
    var touchesEdge: [Bool]
    var soleNeighbour: [Int32]

    init(_ map: LabelGrid<Int32>) throws {
        let (grid, count) = try ConnectedComponents.label(map, connectivity: 1)
        regions = grid.labels
        classOf = [Int32](repeating: 0, count: count + 1)
        sizes = [Int](repeating: 0, count: count + 1)
        touchesEdge = [Bool](repeating: false, count: count + 1)
        soleNeighbour = [Int32](repeating: -1, count: count + 1)
        let shape = map.shape
        let (rows, columns) = (shape.rows, shape.columns)
        let plane = rows * columns
        for pixel in 0..<map.labels.count {
            let region = Int(regions[pixel])
            classOf[region] = map.labels[pixel]
            sizes[region] += 1
            let (z, y, x) = (pixel / plane, (pixel % plane) / columns, pixel % columns)
            var neighbours: [Int] = []
            if x > 0 { neighbours.append(pixel - 1) } else { touchesEdge[region] = true }
            if x < columns - 1 { neighbours.append(pixel + 1) } else { touchesEdge[region] = true }
            if y > 0 { neighbours.append(pixel - columns) } else { touchesEdge[region] = true }
            if y < rows - 1 { neighbours.append(pixel + columns) } else { touchesEdge[region] = true }
            if shape.isVolume {
                if z > 0 { neighbours.append(pixel - plane) } else { touchesEdge[region] = true }
                if z < shape.slices - 1 { neighbours.append(pixel + plane) } else { touchesEdge[region] = true }
            }
            for neighbour in neighbours where regions[neighbour] != regions[pixel] {
                let label = map.labels[neighbour]
                if soleNeighbour[region] == -1 {
                    soleNeighbour[region] = label
                } else if soleNeighbour[region] != label {
                    soleNeighbour[region] = -2
                }
            }
        }
    }
}
