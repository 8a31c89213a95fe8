import SliceLabSupport

/// Errors of the classical baseline: degenerate inputs and impossible configurations.
///
/// Every case says what was wrong and what to do; callers that read files prefix the file name.
public enum ClassicalError: Error, CustomStringConvertible, Equatable {
    case invalidArgument(String)
    /// A pixel or feature value is NaN or infinite.
    case nonFiniteValue(index: Int)
    /// There is nothing to work on (empty image, empty mask, no samples).
    case emptyInput(String)
    /// `classes` classes were asked for but the data only has `distinct` distinct values (or bins).
    case tooFewDistinctValues(classes: Int, distinct: Int)
    /// The exhaustive search would take longer than any user would wait.
    case searchTooLarge(String)
    /// Shapes or channel counts do not agree.
    case shapeMismatch(String)

    public var description: String {
        switch self {
        case .invalidArgument(let message): return message
        case .nonFiniteValue(let index):
            return "pixel \(index) (row-major) is NaN or infinite; mask or replace non-finite values first"
        case .emptyInput(let what): return "\(what) is empty: there is nothing to cluster"
        case .tooFewDistinctValues(let classes, let distinct):
            return "cannot split into \(classes) classes: the input has only \(distinct) distinct value(s); "
                + "use fewer classes"
        case .searchTooLarge(let message): return message
        case .shapeMismatch(let message): return message
        }
    }
}

extension GridShape {
    /// Throws `ClassicalError.emptyInput` unless every dimension is positive.
    func validate() throws {
        guard !isEmpty else { throw ClassicalError.emptyInput("image of shape \(dimensions)") }
    }
}
