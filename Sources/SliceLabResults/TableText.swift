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
}
