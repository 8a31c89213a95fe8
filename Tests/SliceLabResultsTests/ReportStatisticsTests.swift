import Testing

@testable import SliceLabResults

/// The report's summary table over few cases (issue #33): one case has no spread and no test, and below six
/// pairs a two-sided Wilcoxon signed-rank test cannot reach p < 0.05, which the table says beside the p-value.
struct ReportStatisticsTests {
    static func report(cases: Int, classicalName: String = "classical") -> String {
        let dice = (0..<cases).map { [1.0, 0.9 + 0.01 * Double($0)] }
        let methods = [
            HTMLReport.Method(name: "deep", dice: dice, iou: dice, hd95: dice, pValues: nil),
            HTMLReport.Method(name: classicalName, dice: dice, iou: dice, hd95: dice, pValues: [.nan, 0.0625])
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
        #expect(TableText.pValue(0.03125, pairs: 6) == "0.03125")
        #expect(TableText.pValue(.nan, pairs: 8) == "—")
    }

    /// Box-plot labels are the whole run names (they were cut at 14 characters), slanted, inside the plot.
    @Test func boxPlotLabelsAreWholeAndFit() throws {
        let name = "multiotsu-gray-train-vote-with-a-long-name"
        let html = Self.report(cases: 3, classicalName: name)
        #expect(html.contains(">\(name)</text>"))
        let svg = try #require(html.range(of: "<svg class=\"boxplot\"").map { String(html[$0.lowerBound...]) })
        let widthText = try #require(svg.components(separatedBy: "width=\"").dropFirst().first?.prefix { $0 != "\"" })
        let width = try #require(Double(widthText))
        // The last label starts near x = 80 + 90 (the second box) and runs 5.2 px a character at 35°.
        #expect(width >= 80 + 90 + Double(name.count) * 5.2 * 0.819)
    }
}
