/// The classes scored lesion by lesion: named in `dataset.json` (`lesion_classes`, class names) or by
/// `--lesion-classes` (names or label values).
public enum LesionClasses {
    /// The class indices of `tokens` (class names or label values), ascending.
    ///
    /// - Throws: `DatasetError.invalidOption` naming the token that is no foreground class.
    public static func resolve(_ tokens: [String], classNames: [String]) throws -> [Int] {
        let indices = try tokens.map { token -> Int in
            if let index = classNames.firstIndex(of: token) ?? Int(token), (1..<classNames.count).contains(index) {
                return index
            }
            throw DatasetError.invalidOption(
                "--lesion-classes: '\(token)' is not a foreground class (classes: "
                    + "\(classNames.enumerated().dropFirst().map { "\($0.offset) \($0.element)" }.joined(separator: ", ")))"
            )
        }
        return Set(indices).sorted()
    }

    /// Why `names` cannot be a set's lesion classes, or nil.
    static func problem(_ names: [String], classes: [String]) -> String? {
        guard let bad = names.first(where: { !classes.dropFirst().contains($0) }) else { return nil }
        return "'lesion_classes' names '\(bad)', which is not one of the foreground classes \(classes.dropFirst())"
    }
}
