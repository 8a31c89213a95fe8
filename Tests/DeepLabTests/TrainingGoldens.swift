import DeepLab
import Foundation
import TestSupport

/// The goldens of Datasets/goldens/training_goldens.py (torch 2.15, MONAI 1.6.1), read as JSON.
enum TrainingGoldens {
    struct Failure: Error, CustomStringConvertible { let description: String }

    // nonisolated(unsafe): written once by the lazy initialiser, then only read (JSONSerialization's objects).
    nonisolated(unsafe) static let root: [String: Any] = {
        let url = TestSupport.packageRoot.appendingPathComponent("Tests/DeepLabTests/Fixtures/training_goldens.json")
        guard let data = try? Data(contentsOf: url),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object
    }()

    static func section(_ name: String) throws -> Any {
        guard let value = root[name] else { throw Failure(description: "training_goldens.json lacks \(name)") }
        return value
    }

    static func dictionaries(_ value: Any?) throws -> [[String: Any]] {
        guard let array = value as? [[String: Any]] else { throw Failure(description: "expected an array of objects") }
        return array
    }

    static func doubles(_ value: Any?) throws -> [Double] {
        guard let array = value as? [NSNumber] else { throw Failure(description: "expected an array of numbers") }
        return array.map(\.doubleValue)
    }

    static func floats(_ value: Any?) throws -> [Float] { try doubles(value).map(Float.init) }

    static func ints(_ value: Any?) throws -> [Int] { try doubles(value).map { Int($0) } }
}

/// Whether `actual` is within `relative`·|expected| + `absolute` of `expected`, element by element.
func isClose(_ actual: [Double], _ expected: [Double], relative: Double, absolute: Double) -> Bool {
    actual.count == expected.count
        && zip(actual, expected).allSatisfy { abs($0 - $1) <= relative * abs($1) + absolute }
}

/// The largest |actual − expected| relative to the largest |expected|.
func relativeError(_ actual: [Double], _ expected: [Double]) -> Double {
    let scale = max(expected.map(abs).max() ?? 0, 1e-12)
    return zip(actual, expected).map { abs($0 - $1) }.max().map { $0 / scale } ?? .infinity
}

extension TrainingGoldens {
    /// The names of the loss goldens (test arguments stay short in logs).
    static var lossNames: [String] {
        (root["losses"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    }

    static func loss(named name: String) throws -> [String: Any] {
        guard let golden = try dictionaries(section("losses")).first(where: { $0["name"] as? String == name }) else {
            throw Failure(description: "no loss golden \(name)")
        }
        return golden
    }

    /// Indices of the optimizer goldens.
    static var optimizerCaseIndices: [Int] {
        Array(((root["optimizers"] as? [String: Any])?["cases"] as? [Any] ?? []).indices)
    }

    static func optimizerCase(_ index: Int) throws -> [String: Any] {
        try dictionaries((section("optimizers") as? [String: Any])?["cases"])[index]
    }
}
