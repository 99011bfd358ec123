/// Percentiles of a sample (nearest rank).
public func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let s = values.sorted()
    let rank = Int((p / 100 * Double(s.count)).rounded(.up)) - 1
    return s[min(max(rank, 0), s.count - 1)]
}

public func median(_ values: [Double]) -> Double { percentile(values, 50) }
