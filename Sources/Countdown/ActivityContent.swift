// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

/// What an activity shows beside its timer. Only `title` is required.
///
/// Its canonical JSON encoding (compact, keys sorted) is limited to
/// ``ActivityContent/maximumEncodedSize`` bytes.
///
/// Its optional properties are spelled `Optional<T>` for the reason ``ActivityRequest`` gives.
public struct ActivityContent: Hashable, Sendable {
  /// The largest canonical JSON encoding accepted, in bytes.
  public static let maximumEncodedSize = 4096
  /// The keys content may have, on the wire and in a merge patch.
  public static let keys: Set<String> = [
    "title", "subtitle", "alertMessage", "color", "fields", "relevance",
  ]

  public var title: String
  public var subtitle: Optional<String>
  public var alertMessage: Optional<String>
  /// `#RRGGBB` or `#RRGGBBAA`.
  public var color: Optional<String>
  /// Extra values to show (steps, distance, dosage…): strings, numbers or booleans.
  public var fields: [String: JSONValue]
  /// A number for ordering activities.
  public var relevance: Optional<Double>

  @inlinable
  public init(
    title: String, subtitle: String? = nil, alertMessage: String? = nil, color: String? = nil,
    fields: [String: JSONValue] = Dictionary(), relevance: Double? = nil
  ) {
    self.title = title
    self.subtitle = subtitle
    self.alertMessage = alertMessage
    self.color = color
    self.fields = fields
    self.relevance = relevance
  }

  /// The content as a JSON object.
  public var json: JSONValue {
    var o: [String: JSONValue] = ["title": .string(title)]
    if let subtitle { o["subtitle"] = .string(subtitle) }
    if let alertMessage { o["alertMessage"] = .string(alertMessage) }
    if let color { o["color"] = .string(color) }
    if !fields.isEmpty { o["fields"] = .object(fields) }
    if let relevance { o["relevance"] = .double(relevance) }
    return .object(o)
  }

  /// Reads and checks content from a JSON object (unknown keys are not looked at).
  public init(json o: [String: JSONValue]) throws(CountdownError) {
    try self.init { o[$0] }
  }

  /// Reads and checks content from whatever answers for each key (nil when absent).
  init(_ o: (String) -> JSONValue?) throws(CountdownError) {
    guard let t = o("title") else { throw .payload("title is required") }
    guard case .string(let title) = t else {
      throw .payload("title must be a string, not \(t.typeName)")
    }
    self.title = title
    self.subtitle = try Self.optionalString(o, "subtitle")
    self.alertMessage = try Self.optionalString(o, "alertMessage")
    self.color = try Self.optionalString(o, "color")
    try Self.checkColor(color)
    switch o("fields") {
    case nil, .null?: self.fields = [:]
    case .object(let f)?:
      try Self.checkFields(f)
      self.fields = f
    case let v?: throw .payload("fields must be an object, not \(v.typeName)")
    }
    switch o("relevance") {
    case nil, .null?: self.relevance = nil
    case .int(let i)?: self.relevance = Double(i)
    case .double(let d)? where d.isFinite: self.relevance = d
    case let v?: throw .payload("relevance must be a number, not \(v.typeName)")
    }
  }

  private static func optionalString(
    _ o: (String) -> JSONValue?, _ key: String
  ) throws(CountdownError) -> String? {
    switch o(key) {
    case nil, .null?: return nil
    case .string(let s)?: return s
    case let v?: throw .payload("\(key) must be a string, not \(v.typeName)")
    }
  }

  static func isColor(_ s: String) -> Bool {
    let u = Array(s.utf8)
    guard u.count == 7 || u.count == 9, u[0] == UInt8(ascii: "#") else { return false }
    return u.dropFirst().allSatisfy {
      (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
        || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
        || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains($0)
    }
  }

  /// A color must be `#RRGGBB` or `#RRGGBBAA`.
  private static func checkColor(_ color: String?) throws(CountdownError) {
    if let color, !isColor(color) {
      throw .payload("color \(JSONValue.string(color)) must be #RRGGBB or #RRGGBBAA")
    }
  }

  /// Every value of `fields` must be a string, a finite number or a boolean. The first bad
  /// key in byte order is named, so the message does not depend on hashing.
  private static func checkFields(_ f: [String: JSONValue]) throws(CountdownError) {
    func bad(_ v: JSONValue) -> Bool {
      switch v {
      case .string, .int, .bool: false
      case .double(let d): !d.isFinite
      default: true
      }
    }
    guard f.values.contains(where: bad) else { return }
    let k = f.filter { bad($0.value) }.keys.min { $0.utf8.lexicographicallyPrecedes($1.utf8) }!
    throw .payload("fields.\(k) must be a string, number or boolean, not \(f[k]!.typeName)")
  }

  /// The checks `init(json:)` makes that the type itself cannot: the color's form, the fields'
  /// value types and a finite relevance.
  func check() throws(CountdownError) {
    try Self.checkColor(color)
    try Self.checkFields(fields)
    if let relevance, !relevance.isFinite {
      throw .payload("relevance must be a finite number, not \(relevance)")
    }
  }

  /// This content as an engine keeps it, checked against the size limit as
  /// ``encodedChecked()`` checks it: a title alone that needs no escape is kept as the title
  /// itself, its text `{"title":"…"}` written only when read (writing it was a tenth of a
  /// start); any other content as its canonical text.
  func storedChecked() throws(CountdownError) -> StoredContent {
    if subtitle == nil, alertMessage == nil, color == nil, fields.isEmpty, relevance == nil,
      Self.isPlainTitle(title)
    {
      return StoredContent(text: title, isTitle: true)
    }
    return StoredContent(text: try encodedChecked(), isTitle: false)
  }

  /// Whether `{"title":…}` holds `title` without an escape and within the size limit.
  static func isPlainTitle(_ title: String) -> Bool {
    var title = title
    return title.withUTF8(isPlainTitle)
  }

  /// ``isPlainTitle(_:)`` of a title's UTF-8 bytes (``titleOnly(_:)`` checks with it too).
  private static func isPlainTitle(_ t: UnsafeBufferPointer<UInt8>) -> Bool {
    titleOnlyHead.utf8CodeUnitCount + t.count + 2 <= maximumEncodedSize
      && !t.contains(where: JSONWriter.escapes)
  }

  /// The canonical encoding (compact, keys in byte order: alertMessage, color, fields,
  /// relevance, subtitle, title), written straight from the fields without building a
  /// `JSONValue`, and checked against the size limit. Equal to `json.canonicalText`.
  func encodedChecked() throws(CountdownError) -> String {
    if subtitle == nil, alertMessage == nil, color == nil, fields.isEmpty, relevance == nil,
      let text = Self.titleOnly(title)
    {
      return text
    }
    var w = JSONWriter()
    w.bytes.reserveCapacity(32 + title.utf8.count)
    w.raw("{")
    func text(_ key: StaticString, _ value: String?) {
      guard let value else { return }
      w.raw(key)
      w.write(string: value)
      w.raw(",")
    }
    text("\"alertMessage\":", alertMessage)
    text("\"color\":", color)
    if !fields.isEmpty {
      w.raw("\"fields\":")
      w.write(.object(fields))
      w.raw(",")
    }
    if let relevance {
      w.raw("\"relevance\":")
      w.write(double: relevance)
      w.raw(",")
    }
    text("\"subtitle\":", subtitle)
    w.raw("\"title\":")
    w.write(string: title)
    w.raw("}")
    let size = w.bytes.count
    if size > Self.maximumEncodedSize {
      throw CountdownError(
        .attributesTooLarge,
        "content is \(size) bytes of JSON; the limit is \(Self.maximumEncodedSize)")
    }
    return w.string
  }

  /// How the canonical text of content that is a title alone begins. Keys are in byte order
  /// and `title` comes last, so only such content's text begins with it.
  private static let titleOnlyHead: StaticString = "{\"title\":\""

  /// `{"title":…}` for a title that needs no escape, written straight into the string's own
  /// storage (inline up to 15 bytes: no allocation), or nil when the title needs an escape or
  /// the text would pass the size limit (the writer then decides).
  static func titleOnly(_ title: String) -> String? {
    let head = titleOnlyHead
    var title = title
    return title.withUTF8 { t -> String? in
      guard isPlainTitle(t) else { return nil }
      let size = head.utf8CodeUnitCount + t.count + 2
      return String(unsafeUninitializedCapacity: size) { out in
        let h = head.utf8CodeUnitCount
        let base = out.baseAddress!
        base.initialize(from: head.utf8Start, count: h)
        if let from = t.baseAddress { (base + h).initialize(from: from, count: t.count) }
        base[size - 2] = UInt8(ascii: "\"")
        base[size - 1] = UInt8(ascii: "}")
        return size
      }
    }
  }

  /// Content read back from its canonical text (what ``encodedChecked()`` wrote) as JSON
  /// members: no dictionary built, no key hashed. Nil when `text` is not such content.
  init?(canonical text: String) {
    var text = text
    let top = text.withUTF8 { try? JSONParser.parseTopLevel(bytes: $0) }
    guard case .object(let o)? = top, let c = try? ActivityContent({ o[$0] }) else { return nil }
    self = c
  }

  /// Content an engine stored as canonical text: ``encodedChecked()`` produced it, so it
  /// always reads back (an empty title stands in should it not).
  static func stored(canonical text: String) -> ActivityContent {
    ActivityContent(canonical: text) ?? ActivityContent(title: "")
  }

  /// The stored content `stored` after `patch` (see ``merging(patch:)``), checked as
  /// ``storedChecked()`` checks it. A new title for content that is a title alone is that
  /// title alone: nothing to read back or merge.
  static func patching(
    _ stored: StoredContent, with patch: [String: JSONValue]
  ) throws(CountdownError) -> StoredContent {
    // The one pair by iteration: `patch.first` (a start index, then a checked subscript) took
    // about 140 instructions of an update's 1,500.
    var pairs = patch.makeIterator()
    if patch.count == 1, let (key, value) = pairs.next(), key == "title",
      case .string(let title) = value,
      stored.isTitle
        || stored.text.utf8.starts(
          with: UnsafeBufferPointer(
            start: titleOnlyHead.utf8Start, count: titleOnlyHead.utf8CodeUnitCount))
    {
      return try ActivityContent(title: title).storedChecked()
    }
    return try stored.content.merging(patch: patch).storedChecked()
  }

  /// This content with an RFC 7396 JSON Merge Patch applied. `null` removes a key; `title`
  /// cannot be removed.
  ///
  /// The same as applying the patch to ``json`` and reading the result with
  /// ``init(json:)``, errors and their order included, but typed: one pass over the patch
  /// comparing its keys with the six names, no dictionary built and no key hashed (hashing
  /// was a third of a content update's time).
  public func merging(patch: [String: JSONValue]) throws(CountdownError) -> ActivityContent {
    var title: JSONValue?
    var subtitle: JSONValue?
    var alertMessage: JSONValue?
    var color: JSONValue?
    var fields: JSONValue?
    var relevance: JSONValue?
    for (key, value) in patch {
      switch key {
      case "title": title = value
      case "subtitle": subtitle = value
      case "alertMessage": alertMessage = value
      case "color": color = value
      case "fields": fields = value
      case "relevance": relevance = value
      default: throw .payload("\(key) is not a content field")
      }
    }
    if case .null? = title { throw .payload("title cannot be removed") }
    var c = self
    if let t = title {
      guard case .string(let s) = t else {
        throw .payload("title must be a string, not \(t.typeName)")
      }
      c.title = s
    }
    c.subtitle = try Self.patched(c.subtitle, with: subtitle, "subtitle")
    c.alertMessage = try Self.patched(c.alertMessage, with: alertMessage, "alertMessage")
    c.color = try Self.patched(c.color, with: color, "color")
    try Self.checkColor(c.color)
    switch fields {
    case nil: break
    case .null?: c.fields = [:]
    case .object(let sub)?:
      MergePatch.apply(sub, to: &c.fields)
      try Self.checkFields(c.fields)
    case let v?: throw .payload("fields must be an object, not \(v.typeName)")
    }
    switch relevance {
    case nil: break
    case .null?: c.relevance = nil
    case .int(let i)?: c.relevance = Double(i)
    case .double(let d)? where d.isFinite: c.relevance = d
    case let v?: throw .payload("relevance must be a number, not \(v.typeName)")
    }
    return c
  }

  /// An optional string member after a patch value (nil: kept; null: removed).
  private static func patched(
    _ current: String?, with value: JSONValue?, _ key: String
  ) throws(CountdownError) -> String? {
    guard let value else { return current }
    return try optionalString({ _ in value }, key)
  }
}

/// RFC 7396 JSON Merge Patch.
package enum MergePatch {
  /// Applies `patch` to the object `target`.
  package static func apply(_ patch: [String: JSONValue], to target: inout [String: JSONValue]) {
    for (key, value) in patch {
      switch value {
      case .null: target[key] = nil
      case .object(let sub):
        var inner = target[key]?.objectValue ?? [:]
        apply(sub, to: &inner)
        target[key] = .object(inner)
      default: target[key] = value
      }
    }
  }
}

/// Content as an engine keeps it (``ActivityContent/storedChecked()``): its canonical text, or
/// the title itself when the content is a title alone that needs no escape.
struct StoredContent: Equatable {
  /// The canonical text, or the title when `isTitle`.
  var text: String
  /// Whether `text` is the title of content that is a title alone.
  var isTitle: Bool

  /// Content kept as its canonical text (a restored row's, already checked).
  init(canonical text: String) {
    self.text = text
    isTitle = false
  }

  init(text: String, isTitle: Bool) {
    self.text = text
    self.isTitle = isTitle
  }

  /// The canonical JSON text.
  var canonical: String {
    guard isTitle else { return text }
    // The title was checked to need no escape and to fit when it was stored.
    return ActivityContent.titleOnly(text) ?? ActivityContent(title: text).json.canonicalText
  }

  /// The content itself.
  var content: ActivityContent {
    isTitle ? ActivityContent(title: text) : ActivityContent.stored(canonical: text)
  }
}
