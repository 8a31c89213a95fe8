import Dispatch

// Eval-mode 3×3 convolutions (stride 1, any dilation, padding equal to the dilation) by Winograd's minimal
// filtering F(2×2, 3×3) (Lavin & Gray 2016, "Fast Algorithms for Convolutional Neural Networks"): each 2×2
// block of outputs comes from a 4×4 block of inputs through 16 products per channel pair instead of 36, so the
// multiply-adds drop 2.25-fold. They run as 16 matrix products (tiles × input channels by input channels ×
// output channels) in oneDNN's GEMM; what stays in Swift are the linear transforms into and out of the Winograd
// domain, a few additions per value, on channel blocks of 8 that are one SIMD vector each.
//
// A convolution dilated by d is the same computation on the d × d interleaved sub-grids of its input, so a tile
// here reads rows y − d, y, y + d, y + 2d and writes outputs y and y + d; no sub-grid is copied out.
//
// oneDNN 2.6 has a Winograd convolution for AVX-512 only; on this AVX2 machine its direct kernels already run
// near the arithmetic peak, so doing fewer multiplications is the way to go faster.

/// How a convolution's outputs (all of them, or one rectangle) are covered by F(2×2, 3×3) tiles, and the
/// chunks of tiles computed together.
struct WinogradTiling {
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

    /// Tiles down and across the outputs: each block of 2d rows (or columns) holds d tiles, one per sub-grid.
    var tileRows: Int { Self.tiles(rows.count, dilation) }
    var tileColumns: Int { Self.tiles(columns.count, dilation) }

    static func tiles(_ extent: Int, _ dilation: Int) -> Int { (extent + 2 * dilation - 1) / (2 * dilation) * dilation }

    /// The first of the two output rows (or columns) of tile row (or column) `index`; the second is `dilation`
    /// further on.
    func firstRow(_ index: Int) -> Int { rows.lowerBound + Self.offset(index, dilation) }
    func firstColumn(_ index: Int) -> Int { columns.lowerBound + Self.offset(index, dilation) }

    static func offset(_ index: Int, _ dilation: Int) -> Int { index / dilation * 2 * dilation + index % dilation }

    /// The share of the tiles' output slots that fall on outputs: below 1 when the extent is not a multiple of
    /// twice the dilation (a 40-row rectangle at dilation 12 fills 40 of 48 rows).
    static func occupancy(rows: Int, columns: Int, dilation: Int) -> Double {
        Double(rows * columns) / Double(4 * tiles(rows, dilation) * tiles(columns, dilation))
    }

    /// Whole tile rows (of all images, image-major) per chunk: a chunk's transformed inputs and products stay
    /// within a few MiB, so that they are still in the cache when the matrix products and the output transform
    /// read them.
    var rowsPerChunk: Int {
        let bytesPerTile = 16 * max(inputChannels, outputChannels) * MemoryLayout<Float>.size
        return max(1, (6 << 20) / (bytesPerTile * tileColumns))
    }
}

/// A `ConvUnit`'s eval-mode 3×3 convolution by Winograd's F(2×2, 3×3) (see the file comment), batch norm folded
/// and the activation applied; the centre rectangle of `PaddingFreeConvolution` too.
final class WinogradConvolution: ConvolutionStrategy {
    /// The folded weights in the Winograd domain, with the parameter version they were made from.
    private var domainWeights: (version: Int, transformed: [Float], bias: [Float])?
    /// Units with a smaller share of their taps reading the input (`ConvUnit.insideShare`) are left to the other
    /// strategies (0: none is; `ConvolutionStrategyTable.winogradMinimumInsideShare`).
    let minimumInsideShare: Double

    init(minimumInsideShare: Double = 0) { self.minimumInsideShare = minimumInsideShare }

    /// The environment variable that overrides the table for measuring (`Benchmarks/bench_strategies.py`): `0`
    /// leaves every unit to the other strategies, `1` takes the units that fit on any ISA.
    public static let variable = "SLICELAB_WINOGRAD"

    /// Whether units under `table` take this strategy: its `winograd`, or `variable`.
    static func enabled(by table: ConvolutionStrategyTable) -> Bool {
        FusedKernels.measuringSwitch(variable, else: table.winograd)
    }

    /// Whether eval mode computes `unit` by Winograd's F(2×2, 3×3): a 3×3 convolution, stride 1, padding
    /// equal to its dilation (the output keeps the input's extent), not grouped, without a residual input, with
    /// channel counts in whole blocks of 8 and wide enough (256 and up) for the saved products to outweigh the
    /// transforms: ResNet-50's 64- and 128-channel 3×3 convolutions took 10 and 8 ms this way against 6.5 and
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

    /// Eval-mode forward by Winograd's F(2×2, 3×3), batch norm folded and the activation applied, into a
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
                dilation: unit.conv.window.dilation) >= 0.6
    }

    /// Computes the outputs `rows` × `columns` of `unit` (eval: folded batch norm, activation) from `input`
    /// into `output`, both channel-blocked (8) and of the input's extent. Rests on `matrixProduct` (oneDNN's
    /// GEMM).
    func compute(
        _ unit: ConvUnit, _ input: Tensor, into output: Tensor, rows: Range<Int>,
        columns: Range<Int>
    ) throws {
        let s = input.shape
        let tiling = WinogradTiling(
            batch: s[0], inputChannels: unit.conv.inputChannels,
            outputChannels: unit.conv.outputChannels, height: s[2], width: s[3],
            dilation: unit.conv.window.dilation, rows: rows, columns: columns)
        let weights = winogradDomainWeights(unit)
        let allRows = tiling.batch * tiling.tileRows
        let rowsPerChunk = min(tiling.rowsPerChunk, allRows)
        let chunkTiles = rowsPerChunk * tiling.tileColumns
        let transformedBytes = 16 * chunkTiles * tiling.inputChannels * MemoryLayout<Float>.size
        let productBytes = 16 * chunkTiles * tiling.outputChannels * MemoryLayout<Float>.size
        guard let transformed = TensorMemory.shared.allocate(transformedBytes) else {
            throw DeepLabError.outOfMemory(bytes: transformedBytes)
        }
        defer { TensorMemory.shared.release(transformed, bytes: transformedBytes) }
        guard let products = TensorMemory.shared.allocate(productBytes) else {
            throw DeepLabError.outOfMemory(bytes: productBytes)
        }
        defer { TensorMemory.shared.release(products, bytes: productBytes) }
        let v = transformed.assumingMemoryBound(to: Float.self)
        let m = products.assumingMemoryBound(to: Float.self)
        try input.withStorage { source in
            try output.withStorage { destination in
                try weights.transformed.withUnsafeBufferPointer { u in
                    for first in stride(from: 0, to: allRows, by: rowsPerChunk) {
                        let chunk = first..<min(first + rowsPerChunk, allRows)
                        concurrentForEach(chunk) { row in
                            WinogradTransforms.input(
                                source, tiling: tiling, row: row,
                                into: v, tile: (row - first) * tiling.tileColumns,
                                tileCount: chunkTiles)
                        }
                        let tiles = chunk.count * tiling.tileColumns
                        for plane in 0..<16 {
                            try matrixProduct(
                                rows: tiles, columns: tiling.outputChannels, inner: tiling.inputChannels,
                                v + plane * chunkTiles * tiling.inputChannels, lda: tiling.inputChannels,
                                u.baseAddress! + plane * tiling.inputChannels * tiling.outputChannels,
                                ldb: tiling.outputChannels,
                                into: m + plane * chunkTiles * tiling.outputChannels, ldc: tiling.outputChannels)
                        }
                        concurrentForEach(chunk) { row in
                            WinogradTransforms.output(
                                m, tile: (row - first) * tiling.tileColumns,
                                tileCount: chunkTiles, tiling: tiling, row: row,
                                bias: weights.bias, activation: unit.activation,
                                into: destination)
                        }
                    }
                }
            }
        }
    }

    /// The folded weights in the Winograd domain, G g Gᵀ for every (input, output) channel pair, as 16 planes of
    /// [input channels, output channels] (the matrix products' right-hand sides); cached per parameter version.
    private func winogradDomainWeights(_ unit: ConvUnit) -> (transformed: [Float], bias: [Float]) {
        let version = unit.parameterVersion
        if let cached = domainWeights, cached.version == version { return (cached.transformed, cached.bias) }
        let (w, bias) = unit.foldedPlainWeights()
        let inputs = unit.conv.inputChannels
        let outputs = unit.conv.outputChannels
        var u = [Float](repeating: 0, count: 16 * inputs * outputs)
        // G = [[1, 0, 0], [½, ½, ½], [½, −½, ½], [0, 0, 1]] on three vectors: four combinations of them.
        typealias Four = (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>)
        func expand(_ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>) -> Four {
            (a, (a + b + c) * 0.5, (a - b + c) * 0.5, c)
        }
        w.withUnsafeBufferPointer { w in
            u.withUnsafeMutableBufferPointer { u in
                for o in 0..<outputs {
                    for i in 0..<inputs {
                        let k = (o * inputs + i) * 9
                        func kernelRow(_ r: Int) -> SIMD4<Float> {
                            SIMD4(w[k + 3 * r], w[k + 3 * r + 1], w[k + 3 * r + 2], 0)
                        }
                        let rows = expand(kernelRow(0), kernelRow(1), kernelRow(2))  // G g: 4 rows of 3
                        func column(_ c: Int) -> SIMD4<Float> { SIMD4(rows.0[c], rows.1[c], rows.2[c], rows.3[c]) }
                        // Column c of G g Gᵀ; its row r goes to plane 4r + c.
                        let columns = expand(column(0), column(1), column(2))
                        for (c, column) in [columns.0, columns.1, columns.2, columns.3].enumerated() {
                            for r in 0..<4 { u[((r * 4 + c) * inputs + i) * outputs + o] = column[r] }
                        }
                    }
                }
            }
        }
        domainWeights = (version, u, bias)
        return (u, bias)
    }
}

/// The input and output transforms of F(2×2, 3×3) on channel-blocked (8) tensors.
enum WinogradTransforms {
    typealias Vector = SIMD8<Float>

    /// Bᵀ d along one axis: Bᵀ = [[1, 0, −1, 0], [0, 1, 1, 0], [0, −1, 1, 0], [0, 1, 0, −1]].
    @inline(__always)
    static func inputAxis(_ d0: Vector, _ d1: Vector, _ d2: Vector, _ d3: Vector)
        -> (Vector, Vector, Vector, Vector)
    {
        (d0 - d2, d1 + d2, d2 - d1, d1 - d3)
    }

    /// Aᵀ m along one axis: Aᵀ = [[1, 1, 1, 0], [0, 1, −1, −1]].
    @inline(__always)
    static func outputAxis(_ m0: Vector, _ m1: Vector, _ m2: Vector, _ m3: Vector) -> (Vector, Vector) {
        (m0 + m1 + m2, m1 - m2 - m3)
    }

    @inline(__always)
    static func load(_ base: UnsafeMutablePointer<Float>, _ offset: Int) -> Vector {
        UnsafeRawPointer(base + offset).loadUnaligned(as: Vector.self)
    }

    @inline(__always)
    static func store(_ value: Vector, _ base: UnsafeMutablePointer<Float>, _ offset: Int) {
        UnsafeMutableRawPointer(base + offset).storeBytes(of: value, as: Vector.self)
    }

    /// Writes Bᵀ d B for every tile of tile row `row` (image-major over the batch) and every channel block into
    /// the 16 planes of `v` ([tileCount, inputChannels] each), from tile index `tile` on. Inputs outside the
    /// image read as zero (the padding).
    static func input(
        _ x: UnsafeMutableBufferPointer<Float>, tiling: WinogradTiling, row: Int,
        into v: UnsafeMutablePointer<Float>, tile: Int, tileCount: Int
    ) {
        let n = row / tiling.tileRows
        let d = tiling.dilation
        let h = tiling.height
        let w = tiling.width
        let c = tiling.inputChannels
        let top = tiling.firstRow(row % tiling.tileRows) - d
        // Offsets (in floats, within one channel block) of the tile row's four input rows; −1 outside the image.
        var rowOffsets = SIMD4<Int>(repeating: -1)
        for i in 0..<4 where (0..<h).contains(top + i * d) { rowOffsets[i] = (top + i * d) * w * 8 }
        let planeStride = tileCount * c
        let base = x.baseAddress!
        for tx in 0..<tiling.tileColumns {
            let left = tiling.firstColumn(tx) - d
            var columns = SIMD4<Int>(repeating: -1)
            for j in 0..<4 where (0..<w).contains(left + j * d) { columns[j] = (left + j * d) * 8 }
            let out = v + (tile + tx) * c
            for block in 0..<(c / 8) {
                let image = base + ((n * (c / 8) + block) * h * w) * 8
                @inline(__always) func rowTransform(_ i: Int) -> (Vector, Vector, Vector, Vector) {
                    let ro = rowOffsets[i]
                    @inline(__always) func at(_ j: Int) -> Vector {
                        ro < 0 || columns[j] < 0 ? .zero : load(image, ro + columns[j])
                    }
                    return inputAxis(at(0), at(1), at(2), at(3))
                }
                let r = (rowTransform(0), rowTransform(1), rowTransform(2), rowTransform(3))
                let o = out + block * 8
                // Column j of Bᵀ d B goes to planes j, 4 + j, 8 + j, 12 + j.
                @inline(__always) func storeColumn(_ j: Int, _ v: (Vector, Vector, Vector, Vector)) {
                    store(v.0, o, j * planeStride)
                    store(v.1, o, (4 + j) * planeStride)
                    store(v.2, o, (8 + j) * planeStride)
                    store(v.3, o, (12 + j) * planeStride)
                }
                storeColumn(0, inputAxis(r.0.0, r.1.0, r.2.0, r.3.0))
                storeColumn(1, inputAxis(r.0.1, r.1.1, r.2.1, r.3.1))
                storeColumn(2, inputAxis(r.0.2, r.1.2, r.2.2, r.3.2))
                storeColumn(3, inputAxis(r.0.3, r.1.3, r.2.3, r.3.3))
            }
        }
    }

    /// Writes Aᵀ m A plus the bias, through the activation, for every tile of tile row `row` and every output
    /// channel block, from the 16 planes of `m` ([tileCount, outputChannels] each) into `y`; tile slots outside
    /// the tiling's outputs (past the image's edge, or the rectangle's) are dropped.
    static func output(
        _ m: UnsafeMutablePointer<Float>, tile: Int, tileCount: Int, tiling: WinogradTiling,
        row: Int, bias: [Float], activation: Activation, into y: UnsafeMutableBufferPointer<Float>
    ) {
        let n = row / tiling.tileRows
        let d = tiling.dilation
        let h = tiling.height
        let w = tiling.width
        let k = tiling.outputChannels
        let top = tiling.firstRow(row % tiling.tileRows)
        let rowValid = (top < tiling.rows.upperBound, top + d < tiling.rows.upperBound)
        let planeStride = tileCount * k
        let base = y.baseAddress!
        bias.withUnsafeBufferPointer { bias in
            for block in 0..<(k / 8) {
                let b = UnsafeRawPointer(bias.baseAddress! + block * 8).loadUnaligned(as: Vector.self)
                let image = base + ((n * (k / 8) + block) * h * w) * 8
                for tx in 0..<tiling.tileColumns {
                    let left = tiling.firstColumn(tx)
                    let p = m + (tile + tx) * k + block * 8
                    @inline(__always) func at(_ i: Int) -> Vector { load(p, i * planeStride) }
                    let s0 = outputAxis(at(0), at(4), at(8), at(12))
                    let s1 = outputAxis(at(1), at(5), at(9), at(13))
                    let s2 = outputAxis(at(2), at(6), at(10), at(14))
                    let s3 = outputAxis(at(3), at(7), at(11), at(15))
                    let r0 = outputAxis(s0.0, s1.0, s2.0, s3.0)
                    let r1 = outputAxis(s0.1, s1.1, s2.1, s3.1)
                    let columnValid = (left < tiling.columns.upperBound, left + d < tiling.columns.upperBound)
                    @inline(__always) func put(_ value: Vector, _ yy: Int, _ xx: Int) {
                        var v = value + b
                        switch activation {
                        case .none: break
                        case .relu: v = pointwiseMax(v, Vector())
                        case .relu6: v = pointwiseMin(pointwiseMax(v, Vector()), Vector(repeating: 6))
                        }
                        store(v, image, (yy * w + xx) * 8)
                    }
                    if rowValid.0 && columnValid.0 { put(r0.0, top, left) }
                    if rowValid.0 && columnValid.1 { put(r0.1, top, left + d) }
                    if rowValid.1 && columnValid.0 { put(r1.0, top + d, left) }
                    if rowValid.1 && columnValid.1 { put(r1.1, top + d, left + d) }
                }
            }
        }
    }
}
