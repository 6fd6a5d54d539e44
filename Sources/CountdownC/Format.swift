// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

import CCountdownABI
import Countdown

extension cd_format_options {
  /// The Swift style these options name, or an error naming the bad value.
  func timerStyle() throws(CountdownError) -> TimerStyle {
    switch style {
    case CD_STYLE_COMPACT: return .compact
    case CD_STYLE_REMAINING: return .remaining
    case CD_STYLE_POSITIONAL: return .positional
    case CD_STYLE_MINUTE_SECOND: return .minuteSecond
    case CD_STYLE_TIMER: return show_hours == 0 ? .timerWithoutHours : .timer
    case CD_STYLE_UNITS:
      let n = max_units == 0 ? 2 : Int(max_units)
      guard (1...4).contains(n) else {
        throw CountdownError(.invalidPayload, "max_units \(max_units) must be 1 to 4 (0 means 2)")
      }
      return .units(maxUnits: n)
    default:
      throw CountdownError(
        .invalidPayload, "style \(style.rawValue) is not a cd_style (0 to 5)")
    }
  }
}

/// The default options for `style`.
@c(cd_format_options_default)
public func cdFormatOptionsDefault(_ style: cd_style) -> cd_format_options {
  cd_format_options(style: style, max_units: 2, show_hours: 1)
}

/// Formats `milliseconds` into the caller's buffer (negative counts as 0). Allocates nothing
/// on success.
@c(cd_format)
public func cdFormat(
  _ options: UnsafePointer<cd_format_options>?, _ milliseconds: Int64, _ rounding: cd_rounding,
  _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int, _ length: UnsafeMutablePointer<Int>?
) -> cd_status {
  format("cd_format", options, milliseconds, rounding, signed: false, buffer, capacity, length)
}

/// Formats `milliseconds` with its sign (an overtime countdown's `-0:05`). Allocates nothing on
/// success.
@c(cd_format_signed)
public func cdFormatSigned(
  _ options: UnsafePointer<cd_format_options>?, _ milliseconds: Int64, _ rounding: cd_rounding,
  _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int, _ length: UnsafeMutablePointer<Int>?
) -> cd_status {
  format(
    "cd_format_signed", options, milliseconds, rounding, signed: true, buffer, capacity, length)
}

/// Both formatting calls: `signed` keeps a negative duration's sign.
func format(
  _ what: String, _ options: UnsafePointer<cd_format_options>?, _ milliseconds: Int64,
  _ rounding: cd_rounding, signed: Bool, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int,
  _ length: UnsafeMutablePointer<Int>?
) -> cd_status {
  guard let options, let length else {
    return LastError.fail(CD_ERR_INVALID_ARGUMENT, "\(what) needs options and length")
  }
  let style: TimerStyle
  do throws(CountdownError) {
    style = try options.pointee.timerStyle()
  } catch {
    return LastError.fail(CD_ERR_INVALID_ARGUMENT, error.message)
  }
  let r: SecondsRounding
  switch rounding {
  case CD_ROUND_UP: r = .up
  case CD_ROUND_DOWN: r = .down
  default:
    return LastError.fail(
      CD_ERR_INVALID_ARGUMENT, "rounding \(rounding.rawValue) is not a cd_rounding (0 or 1)")
  }
  let seconds =
    signed ? r.signedSeconds(milliseconds: milliseconds) : r.seconds(milliseconds: milliseconds)
  let formatter = TimerFormatter(style: style)
  return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: TimerFormatter.maximumLength) {
    let n = formatter.write(signedSeconds: seconds, into: $0)
    return copyOut(
      UnsafeBufferPointer(rebasing: $0[0..<n]), to: buffer, capacity: capacity, length: length)
  }
}
