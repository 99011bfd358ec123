import LiveViewCore
import CoreMetrics
import Prometheus

/// The gateway's metrics, exported at `/metrics` by swift-prometheus (one registry per gateway, so
/// several gateways in one process never share series).
///
/// Two kinds of source feed it:
/// * counters and gauges that the hot path already keeps as atomics (frames, drops, clients…) are
///   read at scrape time (`MetricsSnapshot`) and carried into the registry: gauges are set, counters
///   advance by what they grew since the last scrape — nothing is added to the per-frame path;
/// * latencies are recorded as they happen through swift-metrics `Timer`s made by a
///   `PrometheusMetricsFactory` over the same registry (histograms in seconds).
final class GatewayMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory

    private struct Key: Hashable {
        var name: String
        var labels: [String]
    }
    private struct Series {
        var counters: [Key: (Prometheus.Counter, Double)] = [:]
        var gauges: [Key: Prometheus.Gauge] = [:]
        var timers: [Key: CoreMetrics.Timer] = [:]
    }
    private let series = Mutex(Series())

    /// Latency histogram buckets (seconds): 1 ms … 10 s.
    static let latencyBuckets: [Duration] = [.milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
                                             .milliseconds(20), .milliseconds(50), .milliseconds(100), .milliseconds(250),
                                             .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10)]

    init() {
        var f = PrometheusMetricsFactory(registry: registry)
        f.defaultDurationHistogramBuckets = Self.latencyBuckets
        factory = f
    }

    /// A latency histogram (`…_seconds`) of one camera, made once and kept.
    func timer(_ name: String, camera: String) -> CoreMetrics.Timer {
        let key = Key(name: name, labels: ["camera", camera])
        return series.withLock { s in
            if let t = s.timers[key] { return t }
            let t = CoreMetrics.Timer(label: name, dimensions: [("camera", camera)], factory: factory)
            s.timers[key] = t
            return t
        }
    }

    /// Carries one scrape's values into the registry and returns the Prometheus text exposition.
    func exposition(_ snapshot: MetricsSnapshot) -> String {
        series.withLock { s in
            for sample in snapshot.samples {
                let pairs = sample.labels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
                let key = Key(name: sample.name, labels: pairs.flatMap { [$0.0, $0.1] })
                switch sample.type {
                case .gauge:
                    let g = s.gauges[key] ?? {
                        let g = registry.makeGauge(descriptor: MetricNameDescriptor(metricName: sample.name, unitName: "", helpText: sample.help), labels: pairs)
                        s.gauges[key] = g
                        return g
                    }()
                    g.set(sample.value)
                case .counter:
                    var (c, last) = s.counters[key] ?? (registry.makeCounter(descriptor: MetricNameDescriptor(metricName: sample.name, unitName: "", helpText: sample.help), labels: pairs), 0)
                    // A counter that went back (a camera removed and added again) starts over.
                    let step = sample.value >= last ? sample.value - last : sample.value
                    if step > 0 { c.increment(by: step) }
                    last = sample.value
                    s.counters[key] = (c, last)
                }
            }
        }
        return registry.emitToString()
    }

    /// A camera was removed: its series go, so `/metrics` does not report a camera that is gone.
    func cameraRemoved(_ id: String) {
        let (counters, gauges, timers) = series.withLock { s -> ([Prometheus.Counter], [Prometheus.Gauge], [CoreMetrics.Timer]) in
            func mine(_ k: Key) -> Bool { stride(from: 0, to: k.labels.count - 1, by: 2).contains { k.labels[$0] == "camera" && k.labels[$0 + 1] == id } }
            let c = s.counters.filter { mine($0.key) }
            let g = s.gauges.filter { mine($0.key) }
            let t = s.timers.filter { mine($0.key) }
            for k in c.keys { s.counters.removeValue(forKey: k) }
            for k in g.keys { s.gauges.removeValue(forKey: k) }
            for k in t.keys { s.timers.removeValue(forKey: k) }
            return (c.values.map(\.0), Array(g.values), Array(t.values))
        }
        for c in counters { registry.unregisterCounter(c) }
        for g in gauges { registry.unregisterGauge(g) }
        for t in timers { t.destroy() }
    }
}

/// One scrape's values, gathered from the cameras and outputs (`help` once per family, then samples).
public struct MetricsSnapshot: Sendable {
    public enum Kind: Sendable { case counter, gauge }
    public struct Sample: Sendable {
        public var name: String
        public var help: String
        public var type: Kind
        public var labels: [String: String]
        public var value: Double
    }
    public private(set) var samples: [Sample] = []
    private var family: (name: String, help: String, type: Kind)?

    public init() {}

    /// Starts a family: the samples that follow with this name get its help and type.
    public mutating func help(_ name: String, _ help: String, type: String) {
        family = (name, help, type == "counter" ? .counter : .gauge)
    }

    public mutating func sample(_ name: String, _ labels: [String: String], _ value: Double) {
        let f = family.flatMap { $0.name == name ? $0 : nil } ?? (name, name, .gauge)
        samples.append(Sample(name: name, help: f.help, type: f.type, labels: labels, value: value))
    }
}
