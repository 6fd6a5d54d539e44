// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

extension ActivityEngine {
  /// Per-slot state that the per-tick path never reads: 40 bytes (the content's text, the side
  /// box, the start instant and one packed word, ``EndWord``). What few activities have (a
  /// countdown's start, a goal, milestones, `endOnExpiry`, a timestamp, a Live Activity to push
  /// to, a stale date, an end or a dismissal too far off for the packed word, the time paused
  /// and the instant of a pause) sits in a
  /// shared side box, copied on write, that most activities never allocate.
  struct ColdState {
    /// The content's canonical JSON, or its title (``StoredContent``).
    private var contentText = ""
    private var box: ColdExtras?
    var startedAt: Int64 = 0
    /// The end's instant, reason and dismissal delay, and whether the content is a title.
    private var word = EndWord()

    init() {}

    /// The content as kept.
    var content: StoredContent {
      get { StoredContent(text: contentText, isTitle: word.contentIsTitle) }
      set {
        contentText = newValue.text
        word.contentIsTitle = newValue.isTitle
      }
    }

    /// Sets every field for a new activity, in place: a start (and a restore) writes its
    /// slot's record field by field instead of building one on the stack and copying it in, a
    /// copy whose wide loads over the fields just written waited for every earlier store to
    /// land.
    mutating func reset(
      content: StoredContent, countdownStart: Int64?, goalMs: Int64?, staleDate: Int64?,
      milestones: [Milestone], endOnExpiry: DismissalPolicy?, overtime: Bool, startedAt: Int64,
      lastTimestamp: Int64?, liveActivity: LiveActivity?, group: String?
    ) {
      contentText = content.text
      word = EndWord(contentIsTitle: content.isTitle)
      self.startedAt = startedAt
      if countdownStart != nil || goalMs != nil || !milestones.isEmpty || endOnExpiry != nil
        || overtime || lastTimestamp != nil || liveActivity != nil || group != nil
        || staleDate != nil
      {
        box = ColdExtras(
          countdownStart: countdownStart, goalMs: goalMs, milestones: milestones,
          endOnExpiry: endOnExpiry, overtime: overtime, lastTimestamp: lastTimestamp,
          liveActivity: liveActivity, group: group, staleDate: staleDate)
      } else {
        box = nil
      }
    }

    /// Whether the record has its side box (for ``ActivityEngine/footprint``).
    var hasExtras: Bool { box != nil }

    /// Mutates the side box, creating it or copying it first when shared.
    private mutating func extras(_ body: (ColdExtras) -> Void) {
      if box == nil {
        box = ColdExtras()
      } else if !isKnownUniquelyReferenced(&box!) {
        box = box!.copy()
      }
      body(box!)
    }

    /// When it ended; 0 before.
    var endedAt: Int64 {
      get {
        guard word.ended else { return 0 }
        return word.inBox ? box!.endedAt : startedAt + Int64(word.endDelta)
      }
      set {
        // Not ended: the getter reads nothing else, so nothing else is written.
        guard newValue != 0 else {
          word.ended = false
          return
        }
        if !word.inBox, let delta = Int32(exactly: newValue - startedAt) {
          word.endDelta = delta
        } else {
          moveEndToBox()
          extras { $0.endedAt = newValue }
        }
        word.ended = true
      }
    }

    /// When it is dismissed: `endedAt` and a delay of at most 4 hours (clamped to 32 bits, as
    /// it always was).
    var dismissAt: Int64 {
      get {
        endedAt + Int64(word.inBox ? box!.dismissDelay : Int32(word.dismissDelay))
      }
      set {
        let delay = Int32(clamping: newValue - endedAt)
        if !word.inBox, delay >= 0, delay <= EndWord.maxDismissDelay {
          word.dismissDelay = UInt32(delay)
          return
        }
        moveEndToBox()
        extras { $0.dismissDelay = delay }
      }
    }

    /// Moves the end's instant and dismissal delay to the side box (once: an end more than
    /// 24 days after the start, or a delay the word cannot hold).
    private mutating func moveEndToBox() {
      guard !word.inBox else { return }
      let ended = endedAt
      let delay = Int32(word.dismissDelay)
      extras {
        $0.endedAt = ended
        $0.dismissDelay = delay
      }
      word.inBox = true
    }

    /// Time spent paused: 0 for an activity never resumed (most), whose record has no box for it.
    var pausedTotal: Int64 {
      get { box?.pausedTotal ?? 0 }
      set { if newValue != 0 || box != nil { extras { $0.pausedTotal = newValue } } }
    }
    /// The instant the displayed value froze when the phase does not imply it: always while
    /// paused; for an ended activity, when it was paused as it ended; for an active one, its
    /// last pause. Nil otherwise: an ended activity froze at its end, an active one is read at
    /// the clock (``ActivityEngine/frozenAt(_:)``).
    var frozenOverride: Int64? {
      get { box?.frozenAt }
      set { if newValue != nil || box != nil { extras { $0.frozenAt = newValue } } }
    }

    var endReason: EndReason {
      get { word.endReason }
      set { word.endReason = newValue }
    }
    var staleDate: Int64? {
      get { box?.staleDate }
      set { if newValue != nil || box != nil { extras { $0.staleDate = newValue } } }
    }
    var countdownStart: Int64? {
      get { box?.countdownStart }
      set { if newValue != nil || box != nil { extras { $0.countdownStart = newValue } } }
    }
    var goalMs: Int64? {
      get { box?.goalMs }
      set { if newValue != nil || box != nil { extras { $0.goalMs = newValue } } }
    }
    var milestones: [Milestone] {
      get { box?.milestones ?? [] }
      set { if !newValue.isEmpty || box != nil { extras { $0.milestones = newValue } } }
    }
    var nextMilestone: Int {
      get { box?.nextMilestone ?? 0 }
      set { if newValue != 0 || box != nil { extras { $0.nextMilestone = newValue } } }
    }
    /// Whether milestones are still to fire: false at once for a record without a side box
    /// (most), without building an empty array to count.
    var hasMilestonesAhead: Bool {
      guard let box else { return false }
      return box.nextMilestone < box.milestones.count
    }
    var endOnExpiry: DismissalPolicy? {
      get { box?.endOnExpiry }
      set { if newValue != nil || box != nil { extras { $0.endOnExpiry = newValue } } }
    }
    /// A countdown that runs on past its end (its value negative once expired).
    var overtime: Bool {
      get { box?.overtime ?? false }
      set { if newValue || box != nil { extras { $0.overtime = newValue } } }
    }
    var lastTimestamp: Int64? {
      get { box?.lastTimestamp }
      set { if newValue != nil || box != nil { extras { $0.lastTimestamp = newValue } } }
    }
    var liveActivity: LiveActivity? {
      get { box?.liveActivity }
      set { if newValue != nil || box != nil { extras { $0.liveActivity = newValue } } }
    }
    /// The activity's group: set by ``reset(content:countdownStart:goalMs:staleDate:milestones:endOnExpiry:overtime:startedAt:lastTimestamp:liveActivity:group:)``
    /// alone (fixed at start).
    var group: String? { box?.group }
  }

  /// ``ColdState``'s packed word: the end's instant as milliseconds after the start (32 bits,
  /// about 24 days either way), the dismissal's delay after the end (24 bits, 4 h 39 min at
  /// most), the end's reason, whether the content is a title, whether it ended, and whether the
  /// end's instant and delay are in the side box instead (when either does not fit).
  struct EndWord {
    private var bits: UInt64 = 0

    /// The largest dismissal delay the word holds (the longest a policy gives is 4 hours).
    static let maxDismissDelay: Int32 = (1 << 24) - 1

    private static let delayShift: UInt64 = 32
    private static let reasonShift: UInt64 = 56
    private static let titleBit: UInt64 = 1 << 58
    private static let endedBit: UInt64 = 1 << 59
    private static let inBoxBit: UInt64 = 1 << 60

    init(contentIsTitle: Bool = false) {
      bits = contentIsTitle ? Self.titleBit : 0
    }

    private mutating func set(_ bit: UInt64, _ on: Bool) {
      bits = on ? bits | bit : bits & ~bit
    }

    var endDelta: Int32 {
      get { Int32(truncatingIfNeeded: bits) }
      set { bits = bits & ~0xFFFF_FFFF | UInt64(UInt32(bitPattern: newValue)) }
    }
    var dismissDelay: UInt32 {
      get { UInt32(truncatingIfNeeded: bits >> Self.delayShift) & 0xFF_FFFF }
      set {
        bits =
          bits & ~(0xFF_FFFF << Self.delayShift)
          | UInt64(newValue & 0xFF_FFFF) << Self.delayShift
      }
    }
    var endReason: EndReason {
      get {
        switch (bits >> Self.reasonShift) & 3 {
        case 0: .requested
        case 1: .expired
        case 2: .maxDuration
        default: .disabled
        }
      }
      set {
        let code: UInt64 =
          switch newValue {
          case .requested: 0
          case .expired: 1
          case .maxDuration: 2
          case .disabled: 3
          }
        bits = bits & ~(3 << Self.reasonShift) | code << Self.reasonShift
      }
    }
    var contentIsTitle: Bool {
      get { bits & Self.titleBit != 0 }
      set { set(Self.titleBit, newValue) }
    }
    var ended: Bool {
      get { bits & Self.endedBit != 0 }
      set { set(Self.endedBit, newValue) }
    }
    var inBox: Bool {
      get { bits & Self.inBoxBit != 0 }
      set { set(Self.inBoxBit, newValue) }
    }
  }

  /// The side box of ``ColdState``.
  final class ColdExtras {
    var countdownStart: Int64?
    var goalMs: Int64?
    /// Milestones in firing order.
    var milestones: [Milestone] = []
    var nextMilestone = 0
    var endOnExpiry: DismissalPolicy?
    var overtime = false
    var lastTimestamp: Int64?
    var liveActivity: LiveActivity?
    var group: String?
    var staleDate: Int64?
    /// The end's instant and dismissal delay, when the record's word cannot hold them.
    var endedAt: Int64 = 0
    var dismissDelay: Int32 = 0
    /// Time spent paused, once an activity was paused and resumed.
    var pausedTotal: Int64 = 0
    /// The instant the value froze, where the phase does not imply it (``ColdState/frozenOverride``).
    var frozenAt: Int64?

    init(
      countdownStart: Int64? = nil, goalMs: Int64? = nil, milestones: [Milestone] = [],
      endOnExpiry: DismissalPolicy? = nil, overtime: Bool = false, lastTimestamp: Int64? = nil,
      liveActivity: LiveActivity? = nil, group: String? = nil, staleDate: Int64? = nil
    ) {
      self.countdownStart = countdownStart
      self.goalMs = goalMs
      self.milestones = milestones
      self.endOnExpiry = endOnExpiry
      self.overtime = overtime
      self.lastTimestamp = lastTimestamp
      self.liveActivity = liveActivity
      self.group = group
      self.staleDate = staleDate
    }

    func copy() -> ColdExtras {
      let c = ColdExtras(
        countdownStart: countdownStart, goalMs: goalMs, milestones: milestones,
        endOnExpiry: endOnExpiry, overtime: overtime, lastTimestamp: lastTimestamp,
        liveActivity: liveActivity, group: group, staleDate: staleDate)
      c.nextMilestone = nextMilestone
      c.endedAt = endedAt
      c.dismissDelay = dismissDelay
      c.pausedTotal = pausedTotal
      c.frozenAt = frozenAt
      return c
    }
  }
}
