/// What the overlap metrics are when the reference of a class is empty (see the README's table).
public enum EmptyRule: String, Sendable, Codable, CaseIterable {
    /// Reference empty → every overlap metric is NaN (MONAI `DiceMetric(ignore_empty=True)`), excluded from
    /// means and counted.
    case nan
    /// Both empty → 1 (MetricsReloaded); reference empty but prediction not → 0 (recall stays NaN).
    case one
}

/// Which HD95 the results hold.
public enum HD95Definition: String, Sendable, Codable, CaseIterable {
    /// The larger of the two directed 95th percentiles, numpy linear interpolation
    /// (MONAI `HausdorffDistanceMetric(percentile=95)`, MetricsReloaded).
    case max
    /// The 95th percentile of both directions' distances pooled (medpy `hd95`).
    case pooled
}
