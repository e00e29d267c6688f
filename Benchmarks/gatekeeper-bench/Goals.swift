import Foundation
import Synchronization

/// Every figure that has a goal, recorded as its table line is made: the table shows the goal and
/// whether it was met beside the figure, and the report ends with all of them, as a table and in JSON.
enum Goals {
    struct Goal {
        var measure: String
        var value: Double
        var low: Double?
        var high: Double?
        var digits: Int

        var met: Bool { (low.map { value >= $0 } ?? true) && (high.map { value <= $0 } ?? true) }

        var limit: String {
            switch (low, high) {
            case (let low?, let high?): "\(fixed(low, digits)) to \(fixed(high, digits))"
            case (let low?, nil): ">= \(fixed(low, digits))"
            case (nil, let high?): "<= \(fixed(high, digits))"
            case (nil, nil): "-"
            }
        }
    }

    private static let recorded = Mutex<[Goal]>([])

    /// Records a goal of at most `high`; returns the goal column, e.g. `<= 1.10  met`.
    static func atMost(_ measure: String, _ value: Double, _ high: Double, digits: Int = 2) -> String {
        record(Goal(measure: measure, value: value, low: nil, high: high, digits: digits))
    }

    /// Records a goal of at least `low`.
    static func atLeast(_ measure: String, _ value: Double, _ low: Double, digits: Int = 2) -> String {
        record(Goal(measure: measure, value: value, low: low, high: nil, digits: digits))
    }

    /// Records a goal of `low` to `high`.
    static func within(_ measure: String, _ value: Double, _ low: Double, _ high: Double, digits: Int = 2) -> String {
        record(Goal(measure: measure, value: value, low: low, high: high, digits: digits))
    }

    private static func record(_ goal: Goal) -> String {
        recorded.withLock { $0.append(goal) }
        return "\(goal.limit)  \(goal.met ? "met" : "NOT MET")"
    }

    /// Every goal recorded so far.
    static var all: [Goal] { recorded.withLock { $0 } }

    static func table() -> String {
        let goals = all
        guard !goals.isEmpty else { return "" }
        let met = goals.filter(\.met).count
        var lines = ["goals: \(met) of \(goals.count) met", ""]
        lines.append(pad("measure", 52) + pad("value", 12) + pad("goal", 16) + "result")
        for goal in goals {
            lines.append(
                pad(goal.measure, 52) + pad(fixed(goal.value, goal.digits), 12) + pad(goal.limit, 16)
                    + (goal.met ? "met" : "NOT MET"))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func json() -> String {
        "["
            + all.map { goal in
                "{\"measure\":\(quoted(goal.measure)),\"value\":\(fixed(goal.value, goal.digits)),"
                    + "\"low\":\(goal.low.map { fixed($0, goal.digits) } ?? "null"),"
                    + "\"high\":\(goal.high.map { fixed($0, goal.digits) } ?? "null"),\"met\":\(goal.met)}"
            }.joined(separator: ",") + "]"
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(1, width - text.count))
    }

    private static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// Prints the figures: as a table, the goals after it; with `--json`, as one JSON object (`json`, an
/// object) with the goals added as `"goals"`. With `--json-file PATH`, the JSON of the same run is also
/// written to PATH (how `make bench` keeps both for BENCHMARKS.md).
func report(_ table: String, json: String) {
    let trimmed = json.trimmingCharacters(in: .whitespacesAndNewlines)
    precondition(trimmed.hasPrefix("{") && trimmed.hasSuffix("}"), "a figure's JSON must be an object")
    let object = trimmed.dropLast() + ",\"goals\":\(Goals.json())}"
    let arguments = CommandLine.arguments
    if let flag = arguments.firstIndex(of: "--json-file"), flag + 1 < arguments.count {
        _ = FileManager.default.createFile(atPath: arguments[flag + 1], contents: Data((object + "\n").utf8))
    }
    if arguments.contains("--json") {
        print(object)
    } else {
        print(table + "\n" + Goals.table())
    }
}

/// `--smoke`: every measurement runs with about a hundredth of its work. CI runs it so the harness cannot
/// rot; its figures are not measurements.
let smoke = CommandLine.arguments.contains("--smoke")

/// `count`, or in a smoke run a hundredth of it (at least 2).
func scaled(_ count: Int) -> Int { smoke ? max(2, count / 100) : count }
