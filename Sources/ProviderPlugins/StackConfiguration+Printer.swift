import Authentication

/// The configuration written back: one file, one way.
extension StackConfiguration {
    /// The configuration as one file, written the one way the grammar writes each thing: settings in a
    /// fixed order with their values normalised (`15m`, `500ms`), includes in place, controls as their
    /// keyword or as a bracket in PAM's order of codes, options by name. Parsing it again (as a file whose
    /// name has no directory, so that substacks' names stay as they are) gives the same configuration.
    public var normalized: String { normalizedLines(annotated: false).map { $0 + "\n" }.joined() }

    /// The lines of ``normalized``; `annotated`, each entry ends with a comment giving its number in
    /// the order the stack runs entries and, for a keyword, the bracket it stands for — still a file
    /// that parses as the same configuration.
    public func normalizedLines(annotated: Bool) -> [String] {
        var lines: [String] = []
        func duration(_ value: Duration) -> String { ConfigurationValue.describe(value) }
        func limit(_ value: Limit) -> String { value.duration.map(duration) ?? "none" }
        let session = [idleTimeout.map { "idle=\(limit($0))" }, absoluteTimeout.map { "absolute=\(limit($0))" }]
            .compactMap { $0 }
        if !session.isEmpty { lines.append((["session"] + session).joined(separator: " ")) }
        if let attempts { lines.append("attempts \(attempts)") }
        if lockout != nil || lockoutDirectory != nil {
            var words = ["lockout"]
            switch lockout {
            case .off?: words.append("deny=0")
            case .on(let policy)?:
                words += ["deny=\(policy.deny)", "interval=\(duration(policy.interval))"]
                words.append("unlock=" + (policy.unlockAfter.map(duration) ?? "never"))
                words.append("root_unlock=" + (policy.rootUnlockAfter.map(duration) ?? "never"))
                if policy.evenDenyRoot { words.append("even_deny_root") }
            case nil: break
            }
            if let lockoutDirectory { words.append("dir=\(lockoutDirectory)") }
            lines.append(words.joined(separator: " "))
        }
        if let failDelay { lines.append("delay \(duration(failDelay))") }
        if cacheTimeout != nil || cacheDirectory != nil {
            let words = ["cache", cacheTimeout.map { "timeout=\(duration($0))" }, cacheDirectory.map { "dir=\($0)" }]
            lines.append(words.compactMap { $0 }.joined(separator: " "))
        }
        for destination in audit {
            switch destination {
            case .syslog(let socket): lines.append("audit syslog socket=\(socket)")
            case .json(let path): lines.append("audit json path=\(path)")
            }
        }
        if auditRequired { lines.append("audit required") }
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
