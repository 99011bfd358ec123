/// How a camera behaves around its answers: prompt (answers at once, as the project's emulators
/// always did) or moody, the way real bodies are (the notes' timing facts): a mode switch takes
/// seconds and the body answers "busy" / "Not Available Now" meanwhile while already saying it has
/// switched, the first live-view frame comes a second or two after the stream starts, a property
/// set is now and then refused as busy once, and card listings are slow.
public struct EmulatorMood: Sendable, Equatable, CustomStringConvertible {
    /// How long a mode switch (Sony camera function, PTP capture or card mode) keeps the body busy.
    public var modeSwitch: Duration
    /// From the start of a live-view stream to its first frame.
    public var firstFrameDelay: Duration
    /// Every n-th property set is answered busy once (0: never).
    public var busyEveryNthSet: Int
    /// Extra time for each page of a card listing.
    public var listingPageDelay: Duration

    public init(modeSwitch: Duration = .zero, firstFrameDelay: Duration = .zero, busyEveryNthSet: Int = 0,
                listingPageDelay: Duration = .zero) {
        self.modeSwitch = modeSwitch
        self.firstFrameDelay = firstFrameDelay
        self.busyEveryNthSet = busyEveryNthSet
        self.listingPageDelay = listingPageDelay
    }

    /// Answers at once.
    public static let prompt = EmulatorMood()
    /// Slow and moody, like a real body: 2 s mode switches, the first frame after 1.5 s, every
    /// third property set refused once, 300 ms per listing page.
    public static let moody = EmulatorMood(modeSwitch: .seconds(2), firstFrameDelay: .milliseconds(1500),
                                           busyEveryNthSet: 3, listingPageDelay: .milliseconds(300))

    public var isMoody: Bool { self != .prompt }

    /// Counts one property set in `sets`; true when the body answers this one busy (every
    /// `busyEveryNthSet`-th; never when that is 0, and then nothing is counted).
    public func refusesSet(counting sets: inout Int) -> Bool {
        guard busyEveryNthSet > 0 else { return false }
        sets += 1
        return sets % busyEveryNthSet == 0
    }
    public var description: String { isMoody ? "moody" : "prompt" }

    var modeSwitchNanos: UInt64 { modeSwitch.nanoseconds }
}
