import Foundation
import ImageFiles
import SliceLabDatasets
import SliceLabIO
import SliceLabSupport

/// One 3-D case of the HTML report as a slice scroller: the display image and each layer's overlay (the
/// reference, then every run), each one PNG sprite whose tiles are the shown slices in order.
///
/// Sprite layout: tile `i` (the `i`-th shown slice, source slice `sliceIndices[i]`) sits at column
/// `i % gridColumns`, row `i / gridColumns` of a grid of `tileColumns` × `tileRows` pixel tiles. The image
/// sprite is gray (1 channel) or RGB; overlay sprites are RGBA with each class's `Overlay.color` at full alpha and
/// background transparent, so the page blends them at the opacity the user picks.
public struct SliceScroller: Sendable {
    /// How much of the volumes a report embeds, so that it stays one file of sane size.
    public struct Policy: Sendable, Equatable {
        /// Scrollers per report at most (the first cases in the report's worst-to-best order).
        public var maxCases: Int
        /// Slices per case at most: longer volumes show evenly spaced slices, always the first and the last.
        public var maxSlices: Int
        /// The longest in-plane side of a tile in pixels: larger slices are reduced by an integer factor
        /// (block means for the image, the block's centre label for overlays).
        public var maxSide: Int
        /// Image-sprite pixels over all scrollers at most: later 3-D cases keep the static middle slice.
        public var maxTotalPixels: Int

        public init(
            maxCases: Int = 8, maxSlices: Int = 128, maxSide: Int = 192,
            maxTotalPixels: Int = 6_000_000
        ) {
            (self.maxCases, self.maxSlices, self.maxSide, self.maxTotalPixels) = (
                maxCases, maxSlices, maxSide,
                maxTotalPixels
            )
        }

        /// The in-plane reduction factor for slices of `rows` × `columns`.
        public func reduction(rows: Int, columns: Int) -> Int {
            max(1, (max(rows, columns) + maxSide - 1) / maxSide)
        }

        /// The source slices shown for a volume of `frames` slices: all, or `maxSlices` evenly spaced ones.
        public func shownSlices(frames: Int) -> [Int] {
            guard frames > maxSlices, maxSlices > 1 else { return Array(0..<frames) }
            let step = Double(frames - 1) / Double(maxSlices - 1)
            return (0..<maxSlices).map { Int((Double($0) * step).rounded()) }
        }

        /// The image-sprite pixels a volume of this shape costs.
        public func pixelCost(frames: Int, rows: Int, columns: Int) -> Int {
            let factor = reduction(rows: rows, columns: columns)
            let tile = ((rows + factor - 1) / factor) * ((columns + factor - 1) / factor)
            return shownSlices(frames: frames).count * tile
        }
    }

    /// One overlay: its name (`reference` or a run) and its RGBA sprite as PNG bytes.
    public struct Layer: Sendable {
        public let name: String
        public let sprite: Data
    }

    public let caseID: String
    /// The source slice of each tile, increasing.
    public let sliceIndices: [Int]
    /// The slice count of the source volume.
    public let frames: Int
    public let tileRows: Int
    public let tileColumns: Int
    public let gridColumns: Int
    /// The in-plane reduction factor applied (1: full resolution).
    public let reduction: Int
    /// Physical height over width of a slice (row spacing × rows over column spacing × columns).
    public let aspect: Double
    /// The image sprite as PNG bytes.
    public let image: Data
    public let layers: [Layer]

    /// Builds the sprites of one case.
    /// - Parameters:
    ///   - image: the case's volume ([frames, rows, columns, channels]); gray is stretched between the 0.5 and
    ///     99.5 percentiles of the shown slices (one window for the whole volume), RGB by its range when that
    ///     exceeds 0…255, other channel counts show channel 0.
    ///   - layers: the reference and each run's label map, with the image's shape.
    ///   - heatLayers: maps over the image's voxels at 0…255 (an uncertainty: 255 the most), shown after the
    ///     label layers as a heat colour whose opacity grows with the value.
    /// - Throws: `InputError.invalidContent` when a label map's shape differs from the image's.
    public init(
        caseID: String, image: ScanImage, layers: [(name: String, labels: LabelMap)],
        heatLayers: [(name: String, values: [UInt8])] = [], policy: Policy = Policy()
    ) throws {
        for layer in heatLayers where layer.values.count != image.frames * image.rows * image.columns {
            throw InputError.invalidContent(
                file: image.source,
                reason: "slice scroller: the \(layer.name) map has \(layer.values.count) values, the image "
                    + "\(image.frames)x\(image.rows)x\(image.columns)")
        }
        for layer in layers
        where layer.labels.frames != image.frames || layer.labels.rows != image.rows
            || layer.labels.columns != image.columns
        {
            throw InputError.invalidContent(
                file: image.source,
                reason: "slice scroller: the \(layer.name) labels "
                    + "are \(layer.labels.frames)x\(layer.labels.rows)x\(layer.labels.columns), the image "
                    + "\(image.frames)x\(image.rows)x\(image.columns)")
        }
        let factor = policy.reduction(rows: image.rows, columns: image.columns)
        let slices = policy.shownSlices(frames: image.frames)
        let (tileRows, tileColumns) = ((image.rows + factor - 1) / factor, (image.columns + factor - 1) / factor)
        let gridColumns = max(1, Int(Double(slices.count).squareRoot().rounded(.up)))
        let gridRows = (slices.count + gridColumns - 1) / gridColumns
        let sprite = Sprite(
            rows: gridRows * tileRows, columns: gridColumns * tileColumns, tileRows: tileRows,
            tileColumns: tileColumns, gridColumns: gridColumns, factor: factor,
            sourceRows: image.rows, sourceColumns: image.columns)
        self.caseID = caseID
        self.sliceIndices = slices
        self.frames = image.frames
        (self.tileRows, self.tileColumns, self.gridColumns, self.reduction) = (
            tileRows, tileColumns, gridColumns,
            factor
        )
        let (rowSpacing, columnSpacing) = (image.spacing[1], image.spacing[2])
        let aspect = Double(image.rows) * rowSpacing / (Double(image.columns) * columnSpacing)
        self.aspect = aspect.isFinite && aspect > 0 ? aspect : Double(image.rows) / Double(image.columns)
        self.image = try sprite.imagePNG(image, slices: slices)
        self.layers =
            try layers.map {
                Layer(name: $0.name, sprite: try sprite.overlayPNG($0.labels, slices: slices))
            }
            + heatLayers.map { Layer(name: $0.name, sprite: try sprite.heatPNG($0.values, slices: slices)) }
    }
}

// MARK: - Sprites

/// The geometry of one case's sprites and the code that fills them.
private struct Sprite {
    let rows: Int, columns: Int, tileRows: Int, tileColumns: Int, gridColumns: Int, factor: Int
    let sourceRows: Int, sourceColumns: Int

    /// Calls `body(tile, tileRow, tileColumn, spriteOffset)` for every pixel of every tile, where
    /// `spriteOffset` is the pixel's index in the sprite.
    private func forEachPixel(tiles: Int, _ body: (Int, Int, Int, Int) -> Void) {
        for tile in 0..<tiles {
            let (top, left) = (tile / gridColumns * tileRows, tile % gridColumns * tileColumns)
            for row in 0..<tileRows {
                for column in 0..<tileColumns { body(tile, row, column, (top + row) * columns + left + column) }
            }
        }
    }

    /// The source pixel range of tile pixel (`row`, `column`): a `factor` × `factor` block clipped to the slice.
    private func block(_ row: Int, _ column: Int) -> (rows: Range<Int>, columns: Range<Int>) {
        (
            row * factor..<min(sourceRows, (row + 1) * factor),
            column * factor..<min(sourceColumns, (column + 1) * factor)
        )
    }

    func imagePNG(_ image: ScanImage, slices: [Int]) throws -> Data {
        let channels = image.channels == 3 ? 3 : 1
        let (low, high) = window(image, slices: slices, channels: channels)
        let scale = high > low ? 255 / (high - low) : 0
        var samples = [UInt8](repeating: 0, count: rows * columns * channels)
        image.values.withUnsafeBufferPointer { values in
            forEachPixel(tiles: slices.count) { tile, row, column, offset in
                let (blockRows, blockColumns) = block(row, column)
                let frameBase = slices[tile] * sourceRows * sourceColumns
                for channel in 0..<channels {
                    var (sum, count): (Float, Float) = (0, 0)
                    for y in blockRows {
                        for x in blockColumns {
                            let value = values[(frameBase + y * sourceColumns + x) * image.channels + channel]
                            if value.isFinite { (sum, count) = (sum + value, count + 1) }
                        }
                    }
                    let mean = count > 0 ? sum / count : low
                    samples[offset * channels + channel] = UInt8(max(0, min(255, (mean - low) * scale)).rounded())
                }
            }
        }
        return try PNGImage(rows: rows, columns: columns, channels: channels, samples: samples).encoded()
    }

    /// The display window: gray between the 0.5 and 99.5 percentiles of the shown slices (from at most about a
    /// million evenly spaced values), RGB 0…255 unless its range exceeds that.
    private func window(_ image: ScanImage, slices: [Int], channels: Int) -> (Float, Float) {
        let perFrame = sourceRows * sourceColumns
        let step = max(1, slices.count * perFrame / 1_000_000)
        var values: [Float] = []
        values.reserveCapacity(slices.count * perFrame / step + 1)
        for slice in slices {
            for pixel in Swift.stride(from: 0, to: perFrame, by: step) {
                for channel in 0..<channels {
                    let value = image.values[(slice * perFrame + pixel) * image.channels + channel]
                    if value.isFinite { values.append(value) }
                }
            }
        }
        values.sort()
        guard let first = values.first, let last = values.last else { return (0, 255) }
        if channels == 1 { return (Float(Percentile.ofSorted(values, 0.5)), Float(Percentile.ofSorted(values, 99.5))) }
        return first < 0 || last > 255 ? (first, last) : (0, 255)
    }

    /// Values 0…255 at each tile pixel's block centre, coloured from dark red through orange to yellow with
    /// opacity rising with the value (0 is transparent).
    func heatPNG(_ values: [UInt8], slices: [Int]) throws -> Data {
        var samples = [UInt8](repeating: 0, count: rows * columns * 4)
        forEachPixel(tiles: slices.count) { tile, row, column, offset in
            let (blockRows, blockColumns) = block(row, column)
            let (y, x) = (
                (blockRows.lowerBound + blockRows.upperBound - 1) / 2,
                (blockColumns.lowerBound + blockColumns.upperBound - 1) / 2
            )
            let value = Int(values[(slices[tile] * sourceRows + y) * sourceColumns + x])
            (samples[offset * 4], samples[offset * 4 + 1], samples[offset * 4 + 2], samples[offset * 4 + 3]) = (
                UInt8(min(255, 128 + value)), UInt8(max(0, 2 * value - 255)), 0, UInt8(value)
            )
        }
        return try PNGImage(rows: rows, columns: columns, channels: 4, samples: samples).encoded()
    }

    func overlayPNG(_ labels: LabelMap, slices: [Int]) throws -> Data {
        var samples = [UInt8](repeating: 0, count: rows * columns * 4)
        var tints: [Int32: (UInt8, UInt8, UInt8)] = [:]
        forEachPixel(tiles: slices.count) { tile, row, column, offset in
            let (blockRows, blockColumns) = block(row, column)
            let (y, x) = (
                (blockRows.lowerBound + blockRows.upperBound - 1) / 2,
                (blockColumns.lowerBound + blockColumns.upperBound - 1) / 2
            )
            let label = labels.labels[(slices[tile] * sourceRows + y) * sourceColumns + x]
            guard label != 0 else { return }
            let tint: (UInt8, UInt8, UInt8)
            if let known = tints[label] {
                tint = known
            } else {
                tint = Overlay.color(ofClass: Int(label))
                tints[label] = tint
            }
            (samples[offset * 4], samples[offset * 4 + 1], samples[offset * 4 + 2], samples[offset * 4 + 3]) = (
                tint.0, tint.1, tint.2, 255
            )
        }
        return try PNGImage(rows: rows, columns: columns, channels: 4, samples: samples).encoded()
    }
}
