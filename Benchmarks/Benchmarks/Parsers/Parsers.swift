// Parse throughput per wire format on the shared fixtures / captures. One iteration = one pass over
// the format's input (≥ 2 MiB, fed like socket reads / datagrams) with a parser kept warm across
// iterations; the same pass is also memcpy'd for the baseline. See Benchmarks/README.md.
import Benchmark
import BenchSupport
import CameraWire
import LiveViewCore

let nsPerFrame = BenchmarkMetric.custom("ns per frame", polarity: .prefersSmaller, useScalingFactor: false)
let mbPerSec = BenchmarkMetric.custom("MB/s", polarity: .prefersLarger, useScalingFactor: false)
let memcpyMBs = BenchmarkMetric.custom("memcpy MB/s", polarity: .prefersLarger, useScalingFactor: false)
let ratio = BenchmarkMetric.custom("cost vs memcpy x100", polarity: .prefersSmaller, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    let cases = try! ParseCase.all()
    for c in cases {
        let runner = ParseRunner(c)
        Benchmark("parse \(c.format.rawValue)",
                  configuration: .init(metrics: [.wallClock, .mallocCountTotal, nsPerFrame, mbPerSec, memcpyMBs, ratio],
                                       timeUnits: .microseconds, warmupIterations: 3,
                                       maxDuration: .seconds(3), maxIterations: 200)) { b in
            // Each iteration: memcpy the pass (baseline), then parse it; both timed here.
            let t0 = MonotonicClock.nanos()
            runner.memcpyPass()
            let t1 = MonotonicClock.nanos()
            let frames = runner.pass()
            let t2 = MonotonicClock.nanos()
            let parseNs = Double(t2 - t1), copyNs = Double(max(t1 - t0, 1))
            b.measurement(nsPerFrame, Int(parseNs / Double(max(frames, 1))))
            b.measurement(mbPerSec, Int(Double(c.bytes) / parseNs * 1e3))
            b.measurement(memcpyMBs, Int(Double(c.bytes) / copyNs * 1e3))
            b.measurement(ratio, Int(parseNs / copyNs * 100))
        }
    }
}
