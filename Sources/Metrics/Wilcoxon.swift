import Foundation

/// The Wilcoxon signed-rank test on paired differences, two-sided, as `scipy.stats.wilcoxon(d)` with its
/// defaults (scipy 1.17: `zero_method="wilcox"`, `correction=False`, `method="auto"`).
///
/// `method="auto"` picks: more than 50 differences → the normal approximation; otherwise no ties and no zeros
/// → the exact null distribution; otherwise at most 13 differences → the exact permutation distribution of
/// the statistic over all sign flips (what scipy's `PermutationMethod` enumerates); otherwise the normal
/// approximation with the tie correction. Zeros are dropped from the ranks (`wilcox`).
public struct WilcoxonSignedRank: Sendable, Equatable {
    /// How the p-value was obtained.
    public enum Method: String, Sendable { case exact, permutation, normal }

    /// min(R+, R−), scipy's reported statistic.
    public let statistic: Double
    /// R+: the sum of the ranks of the positive differences.
    public let positiveRankSum: Double
    public let pValue: Double
    public let method: Method

    /// Tests `differences` (NaN entries must be removed by the caller). No differences → p NaN.
    public init(differences d: [Double]) {
        let n = d.count
        let nonzero = d.filter { $0 != 0 }
        let m = nonzero.count
        let zeros = n - m
        // Average ranks of |d| over the non-zero differences.
        let order = (0..<m).sorted { abs(nonzero[$0]) < abs(nonzero[$1]) }
        var ranks = [Double](repeating: 0, count: m)
        var tieCorrection = 0.0
        var hasTies = false
        var start = 0
        while start < m {
            var end = start + 1
            while end < m && abs(nonzero[order[end]]) == abs(nonzero[order[start]]) { end += 1 }
            let size = Double(end - start)
            let average = Double(start + 1 + end) / 2
            for i in start..<end { ranks[order[i]] = average }
            if end - start > 1 {
                hasTies = true
                tieCorrection += size * size * size - size
            }
            start = end
        }
        var plus = 0.0
        var minus = 0.0
        for i in 0..<m { if nonzero[i] > 0 { plus += ranks[i] } else { minus += ranks[i] } }
        positiveRankSum = plus
        statistic = Swift.min(plus, minus)
        guard n > 0 else {
            (pValue, method) = (.nan, .normal)
            return
        }
        if n <= 50 && !hasTies && zeros == 0 {
            method = .exact
            pValue = Self.exactPValue(positiveRankSum: plus, count: m)
        } else if n <= 13 {
            method = .permutation
            pValue = Self.permutationPValue(ranks: ranks, positive: nonzero.map { $0 > 0 }, observed: plus)
        } else {
            method = .normal
            let count = Double(m)
            let mean = count * (count + 1) * 0.25
            let variance = count * (count + 1) * (2 * count + 1)
            let se = ((variance - tieCorrection / 2) / 24).squareRoot()
            let z = (plus - mean) / se
            pValue = erfc(abs(z) / 2.0.squareRoot())
        }
    }

    /// scipy `_get_wilcoxon_distr` and `WilcoxonDistribution`: 2·min(sf(⌊R+⌋), cdf(⌈R+⌉)), clipped to 1.
    static func exactPValue(positiveRankSum: Double, count n: Int) -> Double {
        var pmf = [1.0]
        if n > 0 {
            for k in 1...n {
                var next = [Double](repeating: 0, count: k * (k + 1) / 2 + 1)
                let previous = pmf.count
                for i in 0..<previous { next[i] = pmf[i] * 0.5 }
                for i in 0..<previous { next[next.count - previous + i] += pmf[i] * 0.5 }
                pmf = next
            }
        }
        let mean = Double(n * (n + 1)) / 4
        func sum(_ range: Range<Int>) -> Double {
            let clamped = range.clamped(to: 0..<pmf.count)
            return pmf[clamped].reduce(0, +)
        }
        func cdf(_ k: Int) -> Double { Double(k) <= mean ? sum(0..<(k + 1)) : 1 - sum((k + 1)..<pmf.count) }
        func sf(_ k: Int) -> Double { Double(k) <= mean ? sum(k..<pmf.count) : 1 - sum(0..<k) }
        let p = 2 * Swift.min(sf(Int(positiveRankSum.rounded(.down))), cdf(Int(positiveRankSum.rounded(.up))))
        return Swift.min(Swift.max(p, 0), 1)
    }

    /// The exact distribution of R+ over all 2^m sign assignments (ranks doubled to integers), two-sided.
    static func permutationPValue(ranks: [Double], positive: [Bool], observed: Double) -> Double {
        let doubled = ranks.map { Int(($0 * 2).rounded()) }
        var counts = [Double](repeating: 0, count: doubled.reduce(0, +) + 1)
        counts[0] = 1
        var reach = 0
        for r in doubled {
            for s in stride(from: reach, through: 0, by: -1) where counts[s] != 0 { counts[s + r] += counts[s] }
            reach += r
        }
        let total = counts.reduce(0, +)
        let target = observed * 2
        var lessOrEqual = 0.0
        var greaterOrEqual = 0.0
        for (s, c) in counts.enumerated() where c != 0 {
            if Double(s) <= target { lessOrEqual += c }
            if Double(s) >= target { greaterOrEqual += c }
        }
        let p = Swift.min(lessOrEqual / total, greaterOrEqual / total) * 2
        return Swift.min(Swift.max(p, 0), 1)
    }
}
