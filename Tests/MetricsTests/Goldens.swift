import Foundation
import Metrics
import SliceLabSupport
import TestSupport

/// The committed goldens of `Datasets/goldens/metrics_goldens.py` (MONAI, medpy, scipy, numpy values).
struct Goldens: Decodable {
    struct Case: Decodable, GoldenLabelMaps {
        let name: String
        let shape: [Int]
        let spacing: [Double]
        let class_count: Int
        let tolerance_mm: Double
        let reference: String
        let prediction: String
        let monai: [String: [String]]
        let medpy: [String: [String?]]
    }

    struct WilcoxonCase: Decodable {
        let name: String
        let differences: [String]
        let statistic: String
        let pvalue: String
        let mean: String
        let std_ddof1: String
        let median: String
        let q25: String
        let q75: String
        let p95: String
        let p2_5: String
    }

    let versions: [String: String]
    let cases: [Case]
    let wilcoxon: [WilcoxonCase]

    static func load() throws -> Goldens {
        let url = TestSupport.packageRoot.appendingPathComponent("Tests/MetricsTests/Fixtures/metrics_goldens.json")
        return try JSONDecoder().decode(Goldens.self, from: Data(contentsOf: url))
    }
}

/// Parses a golden value ("0.5", "inf", "nan").
func value(_ text: String) -> Double { Double(text) ?? .nan }

/// Whether two values agree within `tolerance` (absolute), NaN matching NaN and ±∞ matching itself.
func agree(_ a: Double, _ b: Double, _ tolerance: Double) -> Bool {
    if a.isNaN || b.isNaN { return a.isNaN && b.isNaN }
    if a.isInfinite || b.isInfinite { return a == b }
    return abs(a - b) <= tolerance
}

/// A golden case's label maps: one digit per voxel, row-major over `shape`.
protocol GoldenLabelMaps {
    var shape: [Int] { get }
    var spacing: [Double] { get }
}

extension GoldenLabelMaps {
    func grid(_ digits: String, shape: [Int]? = nil, spacing: [Double]? = nil) throws -> LabelGrid<UInt16> {
        try LabelGrid(
            shape: shape ?? self.shape, spacing: spacing ?? self.spacing, labels: digits.utf8.map { UInt16($0 - 48) })
    }
}
