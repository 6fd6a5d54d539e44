import ArgumentParser
import Countdown

/// `--style`, `--max-units` and `--no-hours`, shared by the commands that write timer text.
struct StyleOptions: ParsableArguments {
  @Option(help: "Text style: \(TimerStyle.names.joined(separator: ", ")).")
  var style: String = "timer"

  @Option(name: .customLong("max-units"), help: "Most units for the units style (1-4).")
  var maxUnits: Int = 2

  @Flag(name: .customLong("no-hours"), help: "Timer style without hours (62:05).")
  var noHours = false

  func validate() throws {
    guard (1...4).contains(maxUnits) else {
      throw ValidationError("--max-units must be 1, 2, 3 or 4, not \(maxUnits)")
    }
    guard TimerStyle(name: style) != nil else {
      throw ValidationError(
        "unknown style '\(style)'; expected one of \(TimerStyle.names.joined(separator: ", "))")
    }
  }

  var timerStyle: TimerStyle {
    TimerStyle(name: style, maxUnits: maxUnits, showsHours: !noHours) ?? .timer
  }
}
