import Foundation
import TestSupport

/// The goldens written by `Datasets/goldens/classical_goldens.py` (scikit-image, scikit-learn, scikit-fuzzy;
/// their versions are recorded in the file), loaded once.
enum Goldens {
    // nonisolated(unsafe): written once by the lazy initialiser, then only read (JSONSerialization's objects).
    nonisolated(unsafe) static let root: [String: Any] = {
        let url = TestSupport.packageRoot.appendingPathComponent("Tests/ClassicalTests/Fixtures/classical_goldens.json")
        guard let data = try? Data(contentsOf: url),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object
    }()

    static func section(_ name: String) -> [String: Any] { root[name] as? [String: Any] ?? [:] }

    static func doubles(_ object: [String: Any], _ key: String) -> [Double] {
        (object[key] as? [Any] ?? []).compactMap { ($0 as? NSNumber)?.doubleValue }
    }

    static func ints(_ object: [String: Any], _ key: String) -> [Int] {
        (object[key] as? [Any] ?? []).compactMap { ($0 as? NSNumber)?.intValue }
    }
}

/// Whether two labelings are the same partition (equal up to a one-to-one renaming of labels).
func samePartition<A: Hashable, B: Hashable>(_ first: [A], _ second: [B]) -> Bool {
    guard first.count == second.count else { return false }
    var forward: [A: B] = [:]
    var backward: [B: A] = [:]
    for (a, b) in zip(first, second) {
        if let mapped = forward[a], mapped != b { return false }
        if let mapped = backward[b], mapped != a { return false }
        forward[a] = b
        backward[b] = a
    }
    return true
}
