import Classical
import SliceLabIO
import SliceLabSupport

/// A Potts Markov random field solved by iterated conditional modes (`Regularization.pottsICM`), 4- (6-)
/// connected, with the context's data term and β.
struct PottsMRF: PostProcessingStep {
    static let name = "mrf"

    static func apply(_ map: LabelGrid<Int32>, context: PostProcessingContext) throws -> LabelGrid<Int32> {
        try Regularization.pottsICM(
            map, classCount: context.classCount, beta: context.beta, connectivity: 1,
            cost: context.unaryCost?()
        ).map
    }
}
