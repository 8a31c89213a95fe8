import Foundation
import Metrics
import SliceLabDatasets
import SliceLabIO

/// Helpers for the plain-text tables `evaluate` and `compare` print.
public enum TableText {
    /// `text` padded with spaces to `width` (at least one space after it).
    public static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    /// "mean ± std" of a summary; "—" without valid cases; "inf (n of N)" when a case is infinite (a distance
    /// to an empty mask), which a mean cannot summarise.
    public static func cell(_ summary: MetricSummary, digits: Int) -> String {
        if summary.validCount == 0 { return "—" }
        if !summary.mean.isFinite { return "inf (missed in some cases)" }
        // One case has no standard deviation (nan): the mean alone.
        guard summary.standardDeviation.isFinite else { return String(format: "%.\(digits)f", summary.mean) }
        return String(format: "%.\(digits)f ± %.\(digits)f", summary.mean, summary.standardDeviation)
    }

    /// A paired test's p-value over `pairs` cases: "—" for fewer than two (no test), and below six the note that
    /// a two-sided Wilcoxon signed-rank test cannot reach p < 0.05 (its smallest exact p is 2 / 2ⁿ).
    public static func pValue(_ p: Double, pairs: Int) -> String {
        guard pairs >= 2 else { return "— (fewer than two paired cases)" }
        guard !p.isNaN else { return "—" }
        let text = String(format: "%.4g", p)
        return pairs < 6 ? text + " (\(pairs) pairs: p < 0.05 is out of reach below 6)" : text
    }

    /// Per class: valid cases and mean ± std of Dice, IoU, HD95 and ASSD; then the foreground mean.
    public static func summary(_ run: ResultsRun) -> String {
        let columns: [(String, MetricName)] = [("Dice", .dice), ("IoU", .iou), ("HD95 mm", .hd95), ("ASSD mm", .assd)]
        let summaries = columns.map { run.summaries($0.1) }
        let nameWidth = max(12, (run.classNames.map(\.count).max() ?? 0) + 2)
        func cell(_ summary: MetricSummary) -> String { Self.cell(summary, digits: 4) }
        var lines = [
            "run '\(run.name)': \(run.caseCount) case(s), \(run.classCount) classes, HD95 "
                + "\(run.settings.hd95.rawValue), empty rule \(run.settings.empty.rawValue)"
        ]
        lines.append(pad("class", nameWidth) + pad("n", 6) + columns.map { pad($0.0, 28) }.joined())
        for c in 0..<run.classCount {
            lines.append(
                pad(run.classNames[c], nameWidth) + pad("\(summaries[0][c].validCount)", 6)
                    + summaries.map { pad(cell($0[c]), 28) }.joined())
        }
        let foreground = summaries.map { ResultsRun.foregroundMean($0) }
        lines.append(
            pad("foreground", nameWidth) + pad("", 6)
                + foreground.map { pad(String(format: "%.4f", $0), 28) }.joined())
        lines += lesionTable([run], classWidth: nameWidth, runWidth: 12)
        lines += calibrationTable(run, classWidth: nameWidth)
        return lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n")
    }

    /// The calibration table of every class, after a blank line; none without probabilities.
    public static func calibrationTable(_ run: ResultsRun, classWidth: Int) -> [String] {
        guard let bins = run.settings.calibrationBins else { return [] }
        let columns: [(String, MetricName)] = [
            ("ECE (\(bins) bins)", .expectedCalibrationError), ("Brier", .brier), ("NLL", .negativeLogLikelihood),
            ("entropy AUROC", .entropyErrorAUROC)
        ]
        var lines = ["", pad("calibration", classWidth) + columns.map { pad($0.0, 20) }.joined()]
        for c in 0..<run.classCount {
            lines.append(
                pad(run.classNames[c], classWidth)
                    + columns.map { pad(cell(run.summaries($0.1)[c], digits: 4), 20) }.joined())
        }
        return lines
    }

    /// The lesion-wise table of the lesion classes, after a blank line; none when no class is scored by lesion.
    public static func lesionTable(_ runs: [ResultsRun], classWidth: Int, runWidth: Int) -> [String] {
        guard let first = runs.first, !first.settings.lesionClasses.isEmpty else { return [] }
        let columns: [(String, MetricName, Int)] = [
            ("lesion Dice", .lesionDice, 3), ("lesion HD95 mm", .lesionHD95, 1),
            ("sensitivity", .lesionSensitivity, 2), ("precision", .lesionPrecision, 2), ("F1", .lesionF1, 2),
            ("PQ", .panopticQuality, 2)
        ]
        var lines = ["", pad("lesions", classWidth) + pad("run", runWidth) + columns.map { pad($0.0, 16) }.joined()]
        for c in first.settings.lesionClasses {
            for run in runs {
                lines.append(
                    pad(first.classNames[c], classWidth) + pad(run.name, runWidth)
                        + columns.map { pad(cell(run.summaries($0.1)[c], digits: $0.2), 16) }.joined())
            }
        }
        return lines
    }
}
