import Classical
import SliceLabIO
import SliceLabSupport

/// One pass of a majority filter over the full 3×3 (3×3×3) window (`Regularization.majority`).
struct MajorityFilter: PostProcessingStep {
    static let name = "majority"

    static func apply(_ map: LabelGrid<Int32>, context: PostProcessingContext) throws -> LabelGrid<Int32> {
        try Regularization.majority(map)
    }
}
