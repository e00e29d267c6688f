import Authentication
import ProviderPlugins

/// The configuration written back: one file, one way.
extension StackConfiguration {
    /// The configuration as one file, written the one way the grammar writes each thing: settings as
    /// `settings` gives them (the host's normalised lines, ``StackSettings/lines``; without
    /// them, each as written), includes in place, controls as their keyword or as a bracket in PAM's order
    /// of codes, options by name. Parsing it again (as a file whose name has no directory, so that
    /// substacks' names stay as they are) gives the same configuration.
    public func normalized(settings: [String]? = nil) -> String {
        normalizedLines(annotated: false, settings: settings).map { $0 + "\n" }.joined()
    }

    /// The lines of ``normalized(settings:)``; `annotated`, each entry ends with a comment giving its number
    /// in the order the stack runs entries and, for a keyword, the bracket it stands for — still a file
    /// that parses as the same configuration.
    public func normalizedLines(annotated: Bool, settings: [String]? = nil) -> [String] {
        var lines = settings ?? self.settings.map(\.text)
        var number = 0
        func write(_ entries: [Entry]) {
            for entry in entries {
                let indent = String(repeating: "    ", count: entry.depth)
                if entry.isSubstack {
                    lines.append(indent + "substack \(entry.provider)")
                    // The substack's entries, as comments: they are read from its file, not from here.
                    if annotated {
                        let start = lines.count
                        write(entry.substack)
                        for index in start..<lines.count {
                            lines[index] = indent + "#   " + lines[index].drop { $0 == " " }
                        }
                    } else {
                        number += Self.flattened(entry.substack).count
                    }
                    continue
                }
                number += 1
                let options = entry.options.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                let name = (entry.toleratesMissing ? "-" : "") + entry.provider
                var line = indent + ([entry.control.description, name] + options).joined(separator: " ")
                if annotated {
                    let bracket = ChainControl(actions: entry.control.actions, default: entry.control.defaultAction)
                    line += "  # \(number)" + (entry.control.keyword == nil ? "" : ": \(bracket)")
                } else if line.hasSuffix("\\") {
                    // A value ending in `\` at the end of the line would continue it: a comment ends it.
                    line += " #"
                }
                lines.append(line)
            }
        }
        write(entries)
        return lines
    }
}
