import CDenseCRFKernels
import Foundation
import SliceLabSupport

/// A fully connected CRF with Gaussian edge potentials, solved by mean-field inference.
///
/// The energy has a unary term −log p (the model's class probabilities, clipped below at 1e-5 as pydensecrf's
/// `unary_from_softmax` clips them) and two Potts pairwise terms over every pair of pixels (voxels):
/// a Gaussian (appearance-free, "smoothness") kernel over positions / `gaussianSXY` and a bilateral
/// ("appearance") kernel over positions / `bilateralSXY` and intensities / `bilateralIntensity`. Each kernel is
/// normalised symmetrically (D^-½ K D^-½) and applied with a permutohedral lattice, so an iteration is linear in
/// the pixel count. Inference starts from softmax(−unary) = the clipped, renormalised probabilities.
///
/// Positions are in pixels for a 2-D image and in millimetres (the grid's spacing) for a volume, where the CRF
/// runs in 3-D. Features are ordered as pydensecrf's `create_pairwise_bilateral` orders them: the axes in array
/// order (z, y, x), then the channels.
///
/// Reference: Krähenbühl, Koltun, "Efficient Inference in Fully Connected CRFs with Gaussian Edge Potentials",
/// NIPS 2011 (arXiv:1210.5644); the peer is pydensecrf's `DenseCRF.inference` with `NORMALIZE_SYMMETRIC`,
/// `DIAG_KERNEL` and `PottsCompatibility`.
public enum DenseCRF {
    /// The CRF's parameters, with the paper's names and pydensecrf's defaults.
    public struct Parameters: Equatable, Hashable, Sendable, Codable {
        /// Mean-field iterations.
        public var iterations = 5
        /// The Gaussian kernel's width θγ, in pixels (2-D) or millimetres (3-D).
        public var gaussianSXY = 3.0
        /// The Gaussian kernel's weight w⁽²⁾.
        public var gaussianWeight = 3.0
        /// The bilateral kernel's spatial width θα, in pixels (2-D) or millimetres (3-D).
        public var bilateralSXY = 80.0
        /// The bilateral kernel's intensity width θβ, in display levels (0–255).
        public var bilateralIntensity = 13.0
        /// The bilateral kernel's weight w⁽¹⁾.
        public var bilateralWeight = 10.0

        public init() {}

        /// The keys `init(parsing:)` takes, in the order `--help` lists them.
        public static let keys = [
            "iterations", "gaussian-sxy", "gaussian-weight", "bilateral-sxy",
            "bilateral-intensity", "bilateral-weight"
        ]

        /// Parses `"iterations=5,gaussian-sxy=3,…"`; keys not given keep their defaults.
        ///
        /// - Throws: `ClassicalError.invalidArgument` for an unknown key, a malformed pair, a repeated key, a
        ///   non-numeric value, a non-positive width or iteration count, or a negative weight.
        public init(parsing spec: String) throws {
            self.init()
            var seen: Set<String> = []
            for pair in spec.split(separator: ",", omittingEmptySubsequences: true) {
                let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces }
                guard parts.count == 2, !parts[0].isEmpty else {
                    throw ClassicalError.invalidArgument("CRF parameter '\(pair)' is not key=value")
                }
                let (key, text) = (parts[0], parts[1])
                guard Self.keys.contains(key) else {
                    throw ClassicalError.invalidArgument(
                        "unknown CRF parameter '\(key)'; known: \(Self.keys.joined(separator: ", "))")
                }
                guard seen.insert(key).inserted else {
                    throw ClassicalError.invalidArgument("CRF parameter '\(key)' is given twice")
                }
                guard let value = Double(text), value.isFinite else {
                    throw ClassicalError.invalidArgument("CRF parameter \(key)=\(text) is not a number")
                }
                switch key {
                case "iterations":
                    guard let count = Int(text) else {
                        throw ClassicalError.invalidArgument("CRF parameter iterations=\(text) is not an integer")
                    }
                    iterations = count
                case "gaussian-sxy": gaussianSXY = value
                case "gaussian-weight": gaussianWeight = value
                case "bilateral-sxy": bilateralSXY = value
                case "bilateral-intensity": bilateralIntensity = value
                default: bilateralWeight = value
                }
            }
            try validate()
        }

        /// Throws `ClassicalError.invalidArgument` unless widths and iterations are positive and weights are
        /// not negative.
        public func validate() throws {
            guard iterations >= 1 else {
                throw ClassicalError.invalidArgument("CRF iterations must be at least 1, not \(iterations)")
            }
            for (name, width) in [
                ("gaussian-sxy", gaussianSXY), ("bilateral-sxy", bilateralSXY),
                ("bilateral-intensity", bilateralIntensity)
            ]
            where !(width > 0 && width.isFinite) {
                throw ClassicalError.invalidArgument("CRF width \(name) must be positive, not \(width)")
            }
            for (name, weight) in [("gaussian-weight", gaussianWeight), ("bilateral-weight", bilateralWeight)]
            where !(weight >= 0 && weight.isFinite) {
                throw ClassicalError.invalidArgument("CRF weight \(name) must not be negative, not \(weight)")
            }
        }

        /// The spec `init(parsing:)` reads back to these parameters.
        public var spec: String {
            "iterations=\(iterations),gaussian-sxy=\(gaussianSXY),gaussian-weight=\(gaussianWeight),"
                + "bilateral-sxy=\(bilateralSXY),bilateral-intensity=\(bilateralIntensity),"
                + "bilateral-weight=\(bilateralWeight)"
        }
    }

    /// The smallest probability the unary term takes (pydensecrf's `unary_from_softmax(clip=1e-5)`).
    public static let probabilityFloor: Float = 1e-5

    /// Runs mean-field inference.
    ///
    /// - Parameters:
    ///   - probabilities: pixel-major, `probabilities[pixel × classCount + k]`, pixels row-major over `shape`.
    ///   - classCount: K ≥ 1.
    ///   - image: the display image at 0–255, pixel-major, `image[pixel × channels + c]`.
    ///   - channels: 1 (grayscale) or 3 (color).
    ///   - shape: the grid; a volume runs a 3-D CRF.
    ///   - spacing: per `shape.dimensions`, in millimetres; used for volumes only (2-D positions are in pixels).
    ///   - parameters: validated parameters.
    ///   - kernelPath: the build of the inner loops (`.automatic` unless a test pins one); a path this CPU
    ///     cannot run runs as baseline.
    /// - Returns: the marginals Q, laid out like `probabilities`.
    /// - Throws: `ClassicalError.shapeMismatch` when the buffers do not match the shape, `.invalidArgument` for
    ///   bad parameters or a non-positive spacing, `.nonFiniteValue` for a NaN probability.
    public static func marginals(
        probabilities: [Float], classCount: Int, image: [Float], channels: Int,
        shape: GridShape, spacing: [Double]? = nil,
        parameters: Parameters = Parameters(),
        kernelPath: KernelPath = .automatic
    ) throws -> [Float] {
        try shape.validate()
        try parameters.validate()
        let n = shape.count
        let k = classCount
        guard k >= 1, probabilities.count == n * k else {
            throw ClassicalError.shapeMismatch(
                "the CRF was given \(probabilities.count) probabilities for "
                    + "\(n) pixels × \(k) classes")
        }
        guard channels >= 1, image.count == n * channels else {
            throw ClassicalError.shapeMismatch(
                "the CRF's display image has \(image.count) values for \(n) pixels "
                    + "× \(channels) channel(s)")
        }
        if let bad = probabilities.firstIndex(where: { !$0.isFinite }) {
            throw ClassicalError.nonFiniteValue(index: bad / k)
        }
        let steps = shape.isVolume ? (spacing ?? [1, 1, 1]) : [1, 1]
        guard steps.count == shape.dimensions.count, steps.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw ClassicalError.invalidArgument("the CRF needs a positive spacing per axis, not \(steps)")
        }

        let positions = positionFeatures(shape: shape, spacing: steps)
        let axes = shape.dimensions.count
        let sxy = Float(parameters.bilateralSXY)
        let sr = Float(parameters.bilateralIntensity)
        /// The bilateral kernel's features: position / sxy, then intensity / sr, per pixel.
        func bilateralFeatures() -> [Float] {
            [Float](unsafeUninitializedCapacity: n * (axes + channels)) { features, count in
                positions.withUnsafeBufferPointer { positions in
                    image.withUnsafeBufferPointer { image in
                        for pixel in 0..<n {
                            let base = pixel * (axes + channels)
                            for a in 0..<axes { features[base + a] = positions[pixel * axes + a] / sxy }
                            for c in 0..<channels { features[base + axes + c] = image[pixel * channels + c] / sr }
                        }
                    }
                }
                count = n * (axes + channels)
            }
        }
        // The two lattices are built concurrently (each build is sequential); a zero weight skips its kernel.
        var built = [Kernel?](repeating: nil, count: 2)
        built.withUnsafeMutableBufferPointer { built in
            Parallel.forEach(2) { index in
                if index == 0, parameters.gaussianWeight > 0 {
                    built[0] = Kernel(
                        features: scaled(positions, axes: axes, by: Float(parameters.gaussianSXY)),
                        dimension: axes, weight: Float(parameters.gaussianWeight))
                } else if index == 1, parameters.bilateralWeight > 0 {
                    built[1] = Kernel(
                        features: bilateralFeatures(), dimension: axes + channels,
                        weight: Float(parameters.bilateralWeight))
                }
            }
        }
        let kernels = built.compactMap { $0 }
        let inference = MeanField(
            probabilities: probabilities, classCount: k, kernels: kernels,
            path: kernelPath.isSupported ? kernelPath : .baseline)
        return inference.run(iterations: parameters.iterations)
    }

    /// The most probable class per pixel of pixel-major marginals (the first on ties).
    public static func labels(marginals: [Float], classCount: Int) -> [Int32] {
        let n = marginals.count / max(classCount, 1)
        return (0..<n).map { pixel in
            var best = 0
            let base = pixel * classCount
            for c in 1..<max(classCount, 1) where marginals[base + c] > marginals[base + best] { best = c }
            return Int32(best)
        }
    }

    // MARK: - Pieces

    /// One pairwise term: a lattice over its features, its symmetric normalisation and its Potts weight.
    struct Kernel {
        let lattice: PermutohedralLattice
        /// 1 / √(K·1 + 1e-20) per pixel.
        let normalisation: [Float]
        let weight: Float

        /// Rests on `crf_lattice_normalisation` (the lattice's filter of ones, as `filter` computes it).
        init(features: [Float], dimension: Int, weight: Float) {
            let lattice = PermutohedralLattice(features: features, dimension: dimension)
            let n = lattice.pointCount
            normalisation = [Float](unsafeUninitializedCapacity: n) { buffer, initialised in
                let status = crf_lattice_normalisation(
                    lattice.offsets, lattice.weights, Int64(n),
                    Int32(dimension), lattice.neighbours,
                    Int64(lattice.vertexCount), buffer.baseAddress)
                precondition(status == 0, "out of memory normalising a lattice over \(n) points")
                initialised = n
            }
            self.lattice = lattice
            self.weight = weight
        }
    }

    /// Pixel positions along the array axes (z, y, x for a volume; y, x for an image), pixel-major: pixel index
    /// for 2-D, index × spacing (mm) for 3-D.
    private static func positionFeatures(shape: GridShape, spacing: [Double]) -> [Float] {
        let axes = shape.dimensions.count
        var features = [Float](repeating: 0, count: shape.count * axes)
        var pixel = 0
        for z in 0..<shape.slices {
            for y in 0..<shape.rows {
                for x in 0..<shape.columns {
                    let base = pixel * axes
                    if shape.isVolume {
                        features[base] = Float(Double(z) * spacing[0])
                        features[base + 1] = Float(Double(y) * spacing[1])
                        features[base + 2] = Float(Double(x) * spacing[2])
                    } else {
                        features[base] = Float(y)
                        features[base + 1] = Float(x)
                    }
                    pixel += 1
                }
            }
        }
        return features
    }

    private static func scaled(_ features: [Float], axes: Int, by width: Float) -> [Float] {
        features.map { $0 / width }
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}
