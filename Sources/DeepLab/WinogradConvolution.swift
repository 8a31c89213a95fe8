import CFloatWinograd
import Dispatch
import Foundation

// Eval-mode 3×3 convolutions (stride 1, any dilation, padding equal to the dilation) by Winograd's minimal
// filtering (Lavin & Gray 2016, "Fast Algorithms for Convolutional Neural Networks"), F(2×2, 3×3) or F(4×4, 3×3):
// each m × m block of outputs comes from an (m + 2) × (m + 2) block of inputs through (m + 2)² products per channel
// pair instead of 9m², so the multiply-adds drop 2.25-fold (m = 2: 16 products for 4 outputs) or 4-fold (m = 4:
// 36 for 16). They run as (m + 2)² matrix products (tiles × input channels by input channels × output channels),
// all in one oneDNN primitive, a 1 × 1 convolution of (m + 2)² groups whose weights it packs once; the linear
// transforms into and out of the Winograd domain, a few additions per value on channel blocks of 8, are our C
// kernels (`CFloatWinograd`).
//
// F(4×4, 3×3) interpolates at 0, 1, −1, ½, −2 and infinity rather than the usual 0, ±1, ±2: the mixed points keep
// its float32 error near half the usual one (Barabasz et al. 2020, "Error analysis and improving the accuracy of
// Winograd convolution for deep neural networks"; 4.4e-6 against 1.1e-5 of the largest output on 1,024 input
// channels of normal inputs, against about 3e-7 for the direct sum).
//
// A convolution dilated by d is the same computation on the d × d interleaved sub-grids of its input, so a tile
// here reads rows y − d, y, …, y + m·d and writes outputs y, y + d, …, y + (m − 1)·d; no sub-grid is copied out.
//
// oneDNN 2.6 has a Winograd convolution for AVX-512 only, and undilated only; where its direct kernels already run
// near the arithmetic peak, doing fewer multiplications is the way to go faster.

/// How a convolution's outputs (all of them, or one rectangle) are covered by F(m×m, 3×3) tiles, and the
/// chunks of tiles computed together.
struct WinogradTiling {
    /// Outputs of a tile along each axis, m: 2 or 4.
    let tile: Int
    let batch: Int
    let inputChannels: Int
    let outputChannels: Int
    /// The input's (and output's) extent.
    let height: Int
    let width: Int
    let dilation: Int
    /// The outputs computed: all of them, or one rectangle (see `WinogradConvolution.computesRectangle`).
    let rows: Range<Int>
    let columns: Range<Int>

    /// The Winograd domain's planes, (m + 2)².
    var planes: Int { (tile + 2) * (tile + 2) }

    /// Tiles down and across the outputs: each block of m·d rows (or columns) holds d tiles, one per sub-grid.
    var tileRows: Int { Self.tiles(rows.count, dilation, tile) }
    var tileColumns: Int { Self.tiles(columns.count, dilation, tile) }

    static func tiles(_ extent: Int, _ dilation: Int, _ tile: Int) -> Int {
        (extent + tile * dilation - 1) / (tile * dilation) * dilation
    }

    /// The first of the m output rows (or columns) of tile row (or column) `index`; the others follow `dilation`
    /// apart.
    func firstRow(_ index: Int) -> Int { rows.lowerBound + offset(index) }
    func firstColumn(_ index: Int) -> Int { columns.lowerBound + offset(index) }

    private func offset(_ index: Int) -> Int { index / dilation * tile * dilation + index % dilation }

    /// The share of F(m×m)'s output slots that fall on outputs: below 1 when the extent is not a multiple of m
    /// times the dilation (a 40-row rectangle at dilation 12 fills 40 of 48 rows with m = 2).
    static func occupancy(rows: Int, columns: Int, dilation: Int, tile: Int = 2) -> Double {
        Double(rows * columns) / Double(tile * tile * tiles(rows, dilation, tile) * tiles(columns, dilation, tile))
    }

    /// Whole tile rows (of all images, image-major) per chunk: a chunk's transformed inputs (or products) within
    /// `bytes`.
    func rowsPerChunk(within bytes: Int) -> Int {
        let bytesPerTile = planes * max(inputChannels, outputChannels) * MemoryLayout<Float>.size
        return max(1, bytes / (bytesPerTile * tileColumns))
    }
}

/// A `ConvUnit`'s eval-mode 3×3 convolution by Winograd's F(m×m, 3×3) (see the file comment), batch norm folded
/// and the activation applied; the centre rectangle of `PaddingFreeConvolution` too.
final class WinogradConvolution: ConvolutionStrategy {
    /// The folded weights in the Winograd domain in the matrix products' layout, with the parameter version they
    /// were made from.
    private var domainWeights: (version: Int, transformed: Tensor, bias: [Float])?
    /// The matrix products by number of tiles.
    private let primitives = PrimitiveCache()
    /// Units with a smaller share of their taps reading the input (`ConvUnit.insideShare`) are left to the other
    /// strategies (0: none is; `ConvolutionStrategyTable.winogradMinimumInsideShare`).
    let minimumInsideShare: Double
    /// Outputs of a tile along each axis: 2, F(2×2, 3×3), or 4, F(4×4, 3×3) (`ConvolutionStrategyTable.winogradTile`).
    let tile: Int
    /// The transforms' instruction set (by default the effective ISA's).
    let isa: cfwino_isa
    /// The most bytes of transformed inputs (or products) computed together (`WinogradTiling.rowsPerChunk`). Each
    /// chunk's matrix products stream every Winograd-domain weight (36 MiB for F(4×4) on 512 channels), so fewer,
    /// larger chunks move less than small ones that stay in the cache.
    let chunkBytes: Int
    /// The matrix products' source and destination layout: channels last, where oneDNN's AVX-512 kernels compute
    /// the grouped 1 × 1 convolution fastest, or channel-blocked (8), the only one its AVX2 1 × 1 kernels take
    /// (they fall back to a general direct kernel on channels last: ResNet-50's Winograd layers 1.8–3 × slower).
    var productsTag: FormatTag { isa == cfwino_avx512 ? .channelsLast : .channelBlocked8 }

    init(
        minimumInsideShare: Double = 0, tile: Int = 2, isa: cfwino_isa = WinogradTransforms.effectiveISA,
        chunkBytes: Int = 32 << 20
    ) {
        precondition(tile == 2 || tile == 4, "F(2×2, 3×3) or F(4×4, 3×3)")
        self.minimumInsideShare = minimumInsideShare
        self.tile = tile
        self.isa = isa
        self.chunkBytes = chunkBytes
    }

    /// The environment variable that overrides the table for measuring (`Benchmarks/bench_strategies.py`): `0`
    /// leaves every unit to the other strategies, `1` takes the units that fit on any ISA.
    public static let variable = "SLICELAB_WINOGRAD"

    /// The environment variable that overrides the table's tile for measuring: `2` or `4`.
    public static let tileVariable = "SLICELAB_WINOGRAD_TILE"

    /// The tile under `table`: its `winogradTile`, or `tileVariable`.
    static func tile(by table: ConvolutionStrategyTable) -> Int {
        switch ProcessInfo.processInfo.environment[tileVariable] {
        case "2": return 2
        case "4": return 4
        default: return table.winogradTile
        }
    }

    /// The environment variable that overrides `winogradBeforeBf16` for measuring: `0` leaves bf16 units to
    /// `Bf16Convolution`, `1` computes those it takes by Winograd (in float32).
    public static let beforeBf16Variable = "SLICELAB_WINOGRAD_BEFORE_BF16"

    /// Whether units under `table` take this strategy: its `winograd`, or `variable`.
    static func enabled(by table: ConvolutionStrategyTable) -> Bool {
        FusedKernels.measuringSwitch(variable, else: table.winograd)
    }

    /// Whether eval mode computes `unit` by Winograd: a 3×3 convolution, stride 1, padding
    /// equal to its dilation (the output keeps the input's extent), not grouped, without a residual input, with
    /// channel counts in whole blocks of 8 and wide enough (256 and up) for the saved products to outweigh the
    /// transforms: ResNet-50's 64- and 128-channel 3×3 convolutions took 10 and 8 ms by F(2×2) against 6.5 and
    /// 6.6 ms direct; its 256- and 512-channel ones 18 and 62 ms against 26 and 108 ms. Never in training.
    func applies(to unit: ConvUnit, inputShape: [Int], residual: Bool, training: Bool) -> Bool {
        !training && !residual && Self.fits(unit)
            && unit.insideShare(inputShape: inputShape) >= minimumInsideShare
    }

    /// Whether `unit`'s convolution and channel counts suit F(2×2, 3×3) (see `applies`).
    static func fits(_ unit: ConvUnit) -> Bool {
        let w = unit.conv.window
        return unit.conv.groups == 1 && w.kernel == 3 && w.stride == 1
            && w.padding == w.dilation && unit.conv.inputChannels % 8 == 0 && unit.conv.outputChannels % 8 == 0
            && min(unit.conv.inputChannels, unit.conv.outputChannels) >= 256
    }

    func releaseInferenceWeights() { domainWeights = nil }

    /// Eval mode only: `applies` excludes training, so a unit never asks for it.
    func trainingForward(_ unit: ConvUnit, _ x: Tensor) throws -> (output: Tensor, saved: SavedConvolution) {
        throw DeepLabError.invalidConfiguration("the Winograd convolution runs in eval mode only")
    }

    /// Eval mode only (see `trainingForward`).
    func backward(
        _ unit: ConvUnit, _ dy: Tensor, saved: SavedConvolution,
        needsInputGradient: Bool
    ) throws -> Tensor? {
        throw DeepLabError.invalidBackward("the Winograd convolution runs in eval mode only")
    }

    /// Eval-mode forward by Winograd, batch norm folded and the activation applied, into a
    /// channel-blocked (8) output. Rests on a reorder of the input into that layout.
    func inferenceForward(
        _ unit: ConvUnit, _ x: Tensor, residual: Tensor?,
        consumingResidual: Bool
    ) throws -> Tensor {
        precondition(residual == nil, "the Winograd convolution takes no residual input")
        let s = x.shape
        let input = try x.reordered(to: .make(s, .channelBlocked8))
        let output = try Tensor(desc: .make(unit.conv.outputDims(s), .channelBlocked8))
        try compute(unit, input, into: output, rows: 0..<s[2], columns: 0..<s[3])
        return output
    }

    /// Whether `PaddingFreeConvolution` computes the all-taps rectangle `rows` × `columns` of `unit` by
    /// `compute`: in eval mode, on the layout it reads and writes, where Winograd applies to the
    /// whole convolution and the rectangle fills at least 60 % of its tiles (ASPP's rate-12 centre on a 64 × 64
    /// map, 40 × 40 outputs, fills 69 %; 2.25-fold fewer products then still leave a 1.5-fold gain).
    func computesRectangle(
        of unit: ConvUnit, rows: TapInterval, columns: TapInterval, tag: FormatTag,
        training: Bool
    ) -> Bool {
        !training && tag == .channelBlocked8 && rows.taps == 0...2 && columns.taps == 0...2 && Self.fits(unit)
            && WinogradTiling.occupancy(
                rows: rows.outputs.count, columns: columns.outputs.count,
                dilation: unit.conv.window.dilation, tile: tile) >= 0.6
    }

    /// Computes the outputs `rows` × `columns` of `unit` (eval: folded batch norm, activation) from `input`
    /// into `output`, both channel-blocked (8) and of the input's extent. Rests on `ConvolutionOp.groupedPointwise`.
    func compute(
        _ unit: ConvUnit, _ input: Tensor, into output: Tensor, rows: Range<Int>,
        columns: Range<Int>
    ) throws {
        let s = input.shape
        let tiling = WinogradTiling(
            tile: tile, batch: s[0], inputChannels: unit.conv.inputChannels,
            outputChannels: unit.conv.outputChannels, height: s[2], width: s[3],
            dilation: unit.conv.window.dilation, rows: rows, columns: columns)
        let allRows = tiling.batch * tiling.tileRows
        let rowsPerChunk = min(tiling.rowsPerChunk(within: chunkBytes), allRows)
        let planes = tiling.planes
        // A last, smaller chunk's primitive takes the full chunks' weights layout: one copy of the weights serves both.
        func products(tiles: Int, weights: MemoryDesc? = nil) throws -> Primitive {
            try primitives.primitive(PrimitiveCache.Key(tiles)) {
                try Primitive(
                    "Winograd products",
                    op: ConvolutionOp.groupedPointwise(
                        groups: planes, inputs: tiling.inputChannels, outputs: tiling.outputChannels, width: tiles,
                        layout: productsTag, weights: weights))
            }
        }
        let chunkTiles = rowsPerChunk * tiling.tileColumns
        let full = try products(tiles: chunkTiles)
        let weights = try winogradDomainWeights(unit, layout: full.desc(.weights))
        // The products' source and destination, [1, planes · channels, 1, tiles] in `productsTag`.
        let transformed = try Tensor(desc: full.desc(.source))
        let multiplied = try Tensor(desc: full.desc(.destination))
        let layout = WinogradTransforms.layout(
            productsTag, tiles: chunkTiles, channels: tiling.inputChannels, planes: planes)
        let productLayout = WinogradTransforms.layout(
            productsTag, tiles: chunkTiles, channels: tiling.outputChannels, planes: planes)
        for first in stride(from: 0, to: allRows, by: rowsPerChunk) {
            let chunk = first..<min(first + rowsPerChunk, allRows)
            input.withStorage { source in
                transformed.withStorage { v in
                    concurrentForEach(chunk) { row in
                        WinogradTransforms.input(
                            source, tiling: tiling, row: row, into: v.baseAddress!,
                            tile: (row - first) * tiling.tileColumns, layout: layout, isa: isa)
                    }
                }
            }
            // A last, smaller chunk computes all the full chunk's tiles when their layout interleaves tiles and
            // channels (channel-blocked); when it puts tiles first (channels last), only its own.
            let primitive =
                chunk.count == rowsPerChunk || productsTag != .channelsLast
                ? full : try products(tiles: chunk.count * tiling.tileColumns, weights: full.desc(.weights))
            try primitive.execute([
                (Arg.src, transformed.prefixView(primitive.desc(.source))), (Arg.weights, weights.transformed),
                (Arg.dst, multiplied.prefixView(primitive.desc(.destination)))
            ])
            multiplied.withStorage { m in
                output.withStorage { destination in
                    concurrentForEach(chunk) { row in
                        WinogradTransforms.output(
                            m.baseAddress!, tile: (row - first) * tiling.tileColumns, layout: productLayout,
                            tiling: tiling, row: row, bias: weights.bias, activation: unit.activation,
                            into: destination, isa: isa)
                    }
                }
            }
        }
    }

    /// The folded weights in the Winograd domain, G g Gᵀ for every (input, output) channel pair, computed in double
    /// precision, as the matrix products' weights (plane by plane, [output channels, input channels]) in their
    /// `layout`; cached per parameter version and layout.
    private func winogradDomainWeights(_ unit: ConvUnit, layout: MemoryDesc) throws -> (
        transformed: Tensor, bias: [Float]
    ) {
        let version = unit.parameterVersion
        if let cached = domainWeights, cached.version == version, cached.transformed.desc.isEqual(to: layout) {
            return (cached.transformed, cached.bias)
        }
        let (w, bias) = unit.foldedPlainWeights()
        let inputs = unit.conv.inputChannels
        let outputs = unit.conv.outputChannels
        let g = WinogradTransforms.kernelTransform(tile: tile)
        let n = tile + 2
        var u = [Float](repeating: 0, count: n * n * outputs * inputs)
        w.withUnsafeBufferPointer { w in
            u.withUnsafeMutableBufferPointer { u in
                concurrentForEach(0..<outputs) { o in
                    var rows = [Double](repeating: 0, count: n * 3)  // G g: n rows of 3
                    for i in 0..<inputs {
                        let k = (o * inputs + i) * 9
                        for r in 0..<n {
                            for b in 0..<3 {
                                rows[r * 3 + b] =
                                    g[r * 3] * Double(w[k + b]) + g[r * 3 + 1] * Double(w[k + 3 + b])
                                    + g[r * 3 + 2] * Double(w[k + 6 + b])
                            }
                        }
                        // (G g Gᵀ)[r][c] is plane n·r + c's weight from input i to output o.
                        for r in 0..<n {
                            for c in 0..<n {
                                let value =
                                    rows[r * 3] * g[c * 3] + rows[r * 3 + 1] * g[c * 3 + 1] + rows[r * 3 + 2]
                                    * g[c * 3 + 2]
                                u[((r * n + c) * outputs + o) * inputs + i] = Float(value)
                            }
                        }
                    }
                }
            }
        }
        let transformed = try Tensor(plain: [n * n, outputs, inputs, 1, 1], values: u).reordered(to: layout)
        domainWeights = (version, transformed, bias)
        return (transformed, bias)
    }
}

/// The kernel transform, and the input and output transforms of F(2×2, 3×3) and F(4×4, 3×3) on channel-blocked (8)
/// tensors (`CFloatWinograd`'s kernels, of oneDNN's effective ISA).
enum WinogradTransforms {
    /// G, (m + 2) × 3 row-major: F(2×2) interpolates at 0, ±1 and infinity, F(4×4) at 0, 1, −1, ½, −2 and infinity
    /// (the file comment says why).
    static func kernelTransform(tile: Int) -> [Double] {
        if tile == 2 { return [1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1] }
        let third: Double = 1 / 3
        let fifteenth: Double = 1 / 15
        var g: [Double] = [1, 0, 0, third, third, third, -third, third, -third]
        g += [-16 * fifteenth, -8 * fifteenth, -4 * fifteenth, fifteenth, -2 * fifteenth, 4 * fifteenth, 0, 0, 1]
        return g
    }

    /// The transforms' instruction set for oneDNN's ISA `name` (AVX-512 kernels where oneDNN runs AVX-512, AVX2
    /// ones where it runs AVX2 or better and this CPU has them, else the baseline's).
    static func isa(forOneDNN name: String) -> cfwino_isa {
        let supported = cfwino_supported()
        return FusedKernels.instructionSet(forOneDNN: name, avx512: cfwino_avx512, avx2: cfwino_avx2) {
            supported & (1 << $0.rawValue) != 0
        } ?? cfwino_baseline
    }

    static let effectiveISA = isa(forOneDNN: oneDNNEffectiveISA)

    /// Where a tile's plane's channel block of the Winograd domain starts: `tile · tileStride + plane · planeStride +
    /// block · blockStride` floats in.
    typealias Layout = (tileStride: Int, planeStride: Int, blockStride: Int)

    /// The Winograd domain of `tiles` tiles, `planes` planes and `channels` channels as the matrix products' source
    /// or destination [1, planes · channels, 1, tiles] in `tag`: channels last or channel-blocked (8).
    static func layout(_ tag: FormatTag, tiles: Int, channels: Int, planes: Int) -> Layout {
        tag == .channelsLast
            ? (tileStride: planes * channels, planeStride: channels, blockStride: 8)
            : (tileStride: 8, planeStride: channels * tiles, blockStride: 8 * tiles)
    }

    /// Tile row `row` (image-major over the batch) of `tiling` for `channels` channels.
    static func row(_ tiling: WinogradTiling, _ row: Int, channels: Int, layout: Layout) -> cfwino_row {
        cfwino_row(
            tile: Int32(tiling.tile), channels: Int32(channels), height: Int32(tiling.height),
            width: Int32(tiling.width), dilation: Int32(tiling.dilation),
            first_row: Int32(tiling.firstRow(row % tiling.tileRows)), row_end: Int32(tiling.rows.upperBound),
            first_column: Int32(tiling.columns.lowerBound), column_end: Int32(tiling.columns.upperBound),
            tile_columns: Int32(tiling.tileColumns), tile_stride: Int64(layout.tileStride),
            plane_stride: Int64(layout.planeStride), block_stride: Int64(layout.blockStride))
    }

    /// Writes Bᵀ d B for every tile of tile row `row` and every channel block of `x` into `v`, from tile index
    /// `tile` on. Inputs outside the image read as zero (the padding).
    static func input(
        _ x: UnsafeMutableBufferPointer<Float>, tiling: WinogradTiling, row: Int,
        into v: UnsafeMutablePointer<Float>, tile: Int, layout: Layout, isa: cfwino_isa
    ) {
        var description = Self.row(tiling, row, channels: tiling.inputChannels, layout: layout)
        let image = x.baseAddress! + row / tiling.tileRows * tiling.inputChannels * tiling.height * tiling.width
        cfwino_input(isa, &description, image, v + tile * layout.tileStride)
    }

    /// Writes Aᵀ m A plus the bias, through the activation, for every tile of tile row `row` and every output
    /// channel block, from `m` (from tile index `tile` on) into `y`; tile slots outside the tiling's outputs (past
    /// the image's edge, or the rectangle's) are dropped.
    static func output(
        _ m: UnsafeMutablePointer<Float>, tile: Int, layout: Layout, tiling: WinogradTiling, row: Int,
        bias: [Float], activation: Activation, into y: UnsafeMutableBufferPointer<Float>, isa: cfwino_isa
    ) {
        var description = Self.row(tiling, row, channels: tiling.outputChannels, layout: layout)
        let image = y.baseAddress! + row / tiling.tileRows * tiling.outputChannels * tiling.height * tiling.width
        let kind = activation == .relu6 ? cfwino_relu6 : activation == .relu ? cfwino_relu : cfwino_identity
        cfwino_output(isa, &description, m + tile * layout.tileStride, bias, kind, image)
    }
}
