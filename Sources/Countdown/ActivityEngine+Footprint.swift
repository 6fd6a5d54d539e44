// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// Where an engine's bytes go: its storage part by part, for BENCHMARKS.md's table of an
/// activity's bytes and for a service that wants to say what its activities cost.
public struct EngineFootprint: Sendable, Hashable {
  /// One part of the engine's storage.
  public struct Part: Sendable, Hashable {
    /// What it holds ("slot records", "id index", …).
    public var name: String
    /// Bytes in use: the entries that hold something (what becomes resident).
    public var used: Int
    /// Bytes allocated for the part, room not yet used included (untouched room of a large
    /// buffer is virtual memory only, not resident).
    public var allocated: Int
  }

  /// Activities not yet dismissed when it was measured.
  public var activities: Int
  /// The parts, in the order of the engine's storage.
  public var parts: [Part]

  /// Bytes in use, all parts.
  public var used: Int { parts.reduce(0) { $0 + $1.used } }
  /// Bytes allocated, all parts.
  public var allocated: Int { parts.reduce(0) { $0 + $1.allocated } }
}

extension ActivityEngine {
  /// The bytes the engine holds, part by part. Walks every slot (O(n)): for measurement, not
  /// for a command's path.
  ///
  /// A String's own bytes count when they live out of line (more than 15 UTF-8 bytes), as the
  /// allocator's chunk would (a 32-byte header, the bytes and a terminator, rounded to 16, and
  /// 8 bytes of the allocator's own), once for an id however many records share it; a side box
  /// of the rarer settings as its object's size, its milestones' array not included.
  public var footprint: EngineFootprint {
    func array<T>(_ name: String, _ a: [T]) -> EngineFootprint.Part {
      let stride = MemoryLayout<T>.stride
      return .init(name: name, used: a.count * stride, allocated: a.capacity * stride)
    }
    var idBytes = 0
    var contentBytes = 0
    var boxes = 0
    for s in slots.indices where slots[s].phase != .free {
      idBytes += Self.outOfLineBytes(slots[s].id)
      contentBytes += Self.outOfLineBytes(cold[s].content.text)
      if cold[s].hasExtras { boxes += 1 }
    }
    let wheelEntry = MemoryLayout<PhaseWheel.Entry>.stride
    let bucketHeaders = PhaseWheel.bucketCount * MemoryLayout<PhaseWheel.Bucket>.stride
    var wheelRoom = 0
    var wheelUsed = 0
    for b in 0..<PhaseWheel.bucketCount {
      wheelRoom += wheel.capacity(ofBucket: b) * wheelEntry
      wheelUsed += Int(wheel.header(b).count) * wheelEntry
    }
    let boxSize = 16 + MemoryLayout<ColdExtras>.size  // an object's header and its fields
    return EngineFootprint(
      activities: count,
      parts: [
        array("slot records", slots),
        array("cold records", cold),
        .init(name: "ids (out of line)", used: idBytes, allocated: idBytes),
        .init(name: "content text (out of line)", used: contentBytes, allocated: contentBytes),
        .init(name: "side boxes", used: boxes * boxSize, allocated: boxes * boxSize),
        .init(
          name: "id index", used: slotIndex.table.count * 8,
          allocated: slotIndex.table.capacity * 8),
        .init(
          name: "wheel entries", used: wheelUsed + bucketHeaders,
          allocated: wheelRoom + bucketHeaders),
        array("wheel back index (bucket)", wheel.bucketOf),
        array("wheel back index (position)", wheel.position),
        array("deadline heap", heap.entries),
        array("deadline heap index", heap.index),
        array("free slots", freeSlots),
      ])
  }

  /// The allocator's chunk behind a String's bytes, or 0 when they are inline or not the
  /// String's own (a literal's).
  static func outOfLineBytes(_ s: String) -> Int {
    let n = s.utf8.count
    guard n > 15 else { return 0 }
    return (32 + n + 1 + 8 + 15) / 16 * 16
  }
}
