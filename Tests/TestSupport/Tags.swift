public import Testing

/// The tiers of `make test` (README, "Testing"), chosen by tag:
/// - no tag: the unit tier (`make test-unit`): in memory or on the injected clock, run in parallel;
/// - `.integration`: real processes, sockets, GStreamer pipelines and clients, run one suite at a time
///   (`make test-integration`);
/// - `.sanitized`: the in-process concurrency suites that `make test-tsan` runs again under
///   ThreadSanitizer (a suite may be in either of the tiers above as well).
extension Tag {
    @Tag public static var integration: Self
    @Tag public static var sanitized: Self
}
