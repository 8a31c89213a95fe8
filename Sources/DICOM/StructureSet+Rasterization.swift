import Foundation

/// The image grid a structure set is rasterised on: a series' slices in its order, their positions and SOP
/// Instance UIDs, its in-plane axes and spacings.
public struct ContourGrid: Sendable {
    public let rows: Int
    public let columns: Int
    /// Image Position (Patient) of each slice, in the series' order.
    public let positions: [[Double]]
    /// Each slice's SOP Instance UID (a multi-frame file's frames share one).
    public let sopInstanceUIDs: [String]
    /// Direction of increasing column and of increasing row (Image Orientation), and the slice normal.
    public let rowDirection: [Double], columnDirection: [Double], normal: [Double]
    /// Millimetres between columns and between rows; between slices along the normal.
    public let columnSpacing: Double, rowSpacing: Double, sliceSpacing: Double
    public let frameOfReferenceUID: String?
    public let seriesInstanceUID: String

    public var slices: Int { positions.count }

    /// A grid given directly (fuzzing and tests): unit axes along L and P, slices along S.
    public init(rows: Int, columns: Int, slices: Int, spacing: Double = 1, frameOfReferenceUID: String? = nil) {
        (self.rows, self.columns) = (rows, columns)
        positions = (0..<slices).map { [0, 0, Double($0) * spacing] }
        sopInstanceUIDs = (0..<slices).map { "1.2.3.\($0 + 1)" }
        (rowDirection, columnDirection, normal) = ([1, 0, 0], [0, 1, 0], [0, 0, 1])
        (columnSpacing, rowSpacing, sliceSpacing) = (spacing, spacing, spacing)
        (self.frameOfReferenceUID, seriesInstanceUID) = (frameOfReferenceUID, "1.2.3")
    }

    /// The grid of `series`.
    ///
    /// - Throws: `DICOMError.missingAttribute` for a slice without Image Position (Patient).
    public init(series: Series) throws {
        let geometry = series.geometry
        (rows, columns) = (series.first.rows, series.first.columns)
        positions = try series.slices.map { slice in
            guard let position = slice.file.imagePosition(frame: slice.frame) else {
                throw DICOMError.missingAttribute(file: slice.file.path, attribute: "Image Position (Patient)")
            }
            return position
        }
        sopInstanceUIDs = series.slices.map { $0.file.dataset.string(.sopInstanceUID) ?? "" }
        let d = geometry.direction
        rowDirection = [d[0], d[3], d[6]]
        columnDirection = [d[1], d[4], d[7]]
        normal = [d[2], d[5], d[8]]
        (sliceSpacing, rowSpacing, columnSpacing) = (geometry.spacing[0], geometry.spacing[1], geometry.spacing[2])
        frameOfReferenceUID = series.first.dataset.string(.frameOfReferenceUID)
        seriesInstanceUID = series.seriesInstanceUID
    }
}

extension StructureSet {
    /// What rasterising one ROI gave: its mask over the grid ([slices, rows, columns], 1 inside) and the contours
    /// it left out (not closed planar).
    public struct ROIMask: Sendable {
        public var mask: [UInt8]
        public var ignored: [String: Int]
    }

    /// Rasterises ROI `roi` onto `grid` as plastimatch and rt-utils do: each closed planar contour lies on the
    /// slice its referenced image names, else on the slice whose position along the normal is within half a
    /// slice of the contour's mean; a pixel is inside a contour when its centre is (even-odd rule), and the
    /// contours of one slice combine by exclusive or, so inner contours cut holes. `POINT` and `OPEN_*` contours
    /// are left out and counted.
    ///
    /// - Throws: `DICOMError.invalidStructureSet` naming the ROI: a Frame of Reference other than the grid's, a
    ///   closed contour on no slice of the grid (or off its plane), one with fewer than three points.
    public func mask(_ roi: ROI, on grid: ContourGrid) throws -> ROIMask {
        let frame = roi.frameOfReferenceUID.isEmpty ? frameOfReferenceUID : roi.frameOfReferenceUID
        if let gridFrame = grid.frameOfReferenceUID, !frame.isEmpty, !gridFrame.isEmpty, frame != gridFrame {
            throw DICOMError.invalidStructureSet(
                file: path, roi: roi.name,
                reason:
                    "its Frame of Reference \(frame) is not the series' \(gridFrame) (series \(grid.seriesInstanceUID))"
            )
        }
        let plane = grid.rows * grid.columns
        var mask = [UInt8](repeating: 0, count: grid.slices * plane)
        var ignored: [String: Int] = [:]
        let depths = grid.positions.map { dot($0, grid.normal) }
        let bySOP = Dictionary(grid.sopInstanceUIDs.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let tolerance = max(grid.sliceSpacing, 1e-6) / 2
        for (number, contour) in roi.contours.enumerated() {
            guard contour.geometricType == "CLOSED_PLANAR" else {
                ignored[contour.geometricType.isEmpty ? "untyped" : contour.geometricType, default: 0] += 1
                continue
            }
            guard contour.points.count >= 3 else {
                throw DICOMError.invalidStructureSet(
                    file: path, roi: roi.name,
                    reason: "contour \(number + 1) is closed planar with \(contour.points.count) point(s)")
            }
            let depth = contour.points.map { dot($0, grid.normal) }.reduce(0, +) / Double(contour.points.count)
            var slice: Int?
            if let image = contour.referencedImage, let index = bySOP[image],
                grid.sopInstanceUIDs.filter({ $0 == image }).count == 1
            {
                slice = index
            }
            if slice == nil,
                let nearest = depths.indices.min(by: { abs(depths[$0] - depth) < abs(depths[$1] - depth) }),
                abs(depths[nearest] - depth) <= tolerance
            {
                slice = nearest
            }
            guard let slice, abs(depths[slice] - depth) <= tolerance else {
                throw DICOMError.invalidStructureSet(
                    file: path, roi: roi.name,
                    reason: String(
                        format: "contour %d lies %.2f mm along the slice normal, on no slice of series %@ "
                            + "(slices %.2f … %.2f mm, %.2f mm apart)", number + 1, depth, grid.seriesInstanceUID,
                        depths.min() ?? 0, depths.max() ?? 0, grid.sliceSpacing))
            }
            let origin = grid.positions[slice]
            let polygon = contour.points.map { point -> (x: Double, y: Double) in
                let offset = zip(point, origin).map { $0 - $1 }
                return (
                    dot(offset, grid.rowDirection) / grid.columnSpacing,
                    dot(offset, grid.columnDirection) / grid.rowSpacing
                )
            }
            Self.fillEvenOdd(polygon, rows: grid.rows, columns: grid.columns) { pixel in
                mask[slice * plane + pixel] ^= 1
            }
        }
        return ROIMask(mask: mask, ignored: ignored)
    }

    /// Calls `toggle` for every pixel (row-major index) whose centre (column j, row i at integer coordinates) is
    /// inside `polygon` (x along columns, y along rows, in pixels) by the even-odd rule: a centre is inside when a
    /// ray to its right crosses the edges an odd number of times (an edge counts for the rows in [min y, max y)).
    static func fillEvenOdd(_ polygon: [(x: Double, y: Double)], rows: Int, columns: Int, toggle: (Int) -> Void) {
        let ys = polygon.map(\.y)
        guard let low = ys.min(), let high = ys.max() else { return }
        let first = max(0, Int(low.rounded(.up)))
        let last = min(rows - 1, Int(high.rounded(.up)) - 1)
        guard first <= last else { return }
        var crossings: [Double] = []
        for row in first...last {
            let y = Double(row)
            crossings.removeAll(keepingCapacity: true)
            for index in polygon.indices {
                let (a, b) = (polygon[index], polygon[(index + 1) % polygon.count])
                guard (a.y <= y) != (b.y <= y) else { continue }
                crossings.append(a.x + (y - a.y) / (b.y - a.y) * (b.x - a.x))
            }
            crossings.sort()
            for pair in stride(from: 0, to: crossings.count - 1, by: 2) {
                let start = max(0, Int(crossings[pair].rounded(.up)))
                let end = min(columns, Int(crossings[pair + 1].rounded(.up)))
                guard start < end else { continue }
                for column in start..<end { toggle(row * columns + column) }
            }
        }
    }
}

private func dot(_ a: [Double], _ b: [Double]) -> Double { zip(a, b).map(*).reduce(0, +) }
