import ArgumentParser

/// `livegate bench`: the performance figures (see Benchmarks/README.md).
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the benchmarks and print per-frame costs.")
    func run() async throws {
        print("bench: not implemented yet")
    }
}
