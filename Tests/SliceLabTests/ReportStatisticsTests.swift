import Testing

@testable import SliceLabKit
@testable import SliceLabResults

/// The report's summary table over few cases (issue #33): one case has no spread and no test, and below six
/// pairs a two-sided Wilcoxon signed-rank test cannot reach p < 0.05, which the table says beside the p-value.
struct ReportStatisticsTests {
    static func report(cases: Int) -> String {
        let dice = (0..<cases).map { [1.0, 0.9 + 0.01 * Double($0)] }
        let methods = [
            HTMLReport.Method(name: "deep", dice: dice, iou: dice, hd95: dice, pValues: nil),
            HTMLReport.Method(name: "classical", dice: dice, iou: dice, hd95: dice, pValues: [.nan, 0.0625])
        ]
        return HTMLReport(
            title: "t", classNames: ["background", "thing"], caseIDs: (0..<cases).map { "c\($0)" },
            methods: methods, pictures: []
        ).html()
    }

    @Test func oneCaseShowsNoSpreadAndNoPValue() {
        let html = Self.report(cases: 1)
        #expect(html.contains("0.9 ± — (one case)"))
        #expect(!html.contains("± 0<"))
        #expect(html.contains("— (fewer than two paired cases)"))
    }

    @Test func fewPairsSayWhyPIsNotSmall() {
        #expect(Self.report(cases: 5).contains("0.0625 (5 pairs: p < 0.05 is out of reach below 6)"))
        #expect(HTMLReport.pValue(0.03125, pairs: 6) == "0.03125")
        #expect(HTMLReport.pValue(.nan, pairs: 8) == "—")
    }
}
