import ArgumentParser

/// `livegate bench`: the benchmarks live in their own package (Benchmarks/), so that the benchmark
/// harness and its malloc interposer never link into the gateway; this only says how to run them.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Say how to run the benchmarks (make bench).")
    func run() async throws {
        print("""
        The benchmarks are a separate package: run them from the repository root with

            make bench

        (builds Benchmarks/ and runs: allocations per frame on ingest → hub → /raw, parse throughput per
        wire format, camera → RTSP client latency on loopback, CPU per annotated frame vs ffmpeg).
        Single suites: see Benchmarks/README.md.
        """)
    }
}
