import Authentication
public import ProviderPlugins

/// Reading a configuration file: its settings and its stack, as libpam reads a service file's lines
/// (the line reader is StackConfiguration+Lines.swift).
extension StackConfiguration {
    /// Parses `text`, read from `file`.
    /// - Parameters:
    ///   - registry: The providers that may be named, and their options.
    ///   - read: Reads an included file (the tool reads it as safely as the first one).
    ///   - setting: Reads each setting line as it comes (the host's meaning of it:
    ///     ``StackSettings``), so that the first problem of the file is the one reported, wherever it is.
    /// - Throws: ``ConfigurationError`` for the first problem; nothing of a broken file is used.
    public static func parse(
        _ text: [UInt8],
        file: String,
        registry: ProviderRegistry,
        read: @escaping (String) throws(ConfigurationError) -> [UInt8] = { path throws(ConfigurationError) in
            throw ConfigurationError(.include, at: .init(file: path, line: 0, column: 0), word: path, "cannot be read")
        },
        setting: @escaping (Setting) throws(ConfigurationError) -> Void = { _ throws(ConfigurationError) in }
    ) throws(ConfigurationError) -> StackConfiguration {
        var configuration = StackConfiguration()
        var parser = Parser(registry: registry, read: read, setting: setting)
        var entries: [Entry] = []
        try parser.parse(text, file: file, into: &configuration, entries: &entries, depth: 0, including: [file])
        configuration.entries = entries
        return configuration
    }

    struct Parser {
        let registry: ProviderRegistry
        let read: (String) throws(ConfigurationError) -> [UInt8]
        let setting: (Setting) throws(ConfigurationError) -> Void
        var stackStarted = false
        var includesRead = 0
        var entriesRead = 0
        /// This reader's bound on nested includes and substacks (libpam 1.5.2 follows 120 nested includes;
        /// a deeper nesting here is a mistake, or an attack on the reader).
        static let maxIncludeDepth = 16
        /// libpam fails a login through a 16th nested substack (`PAM_SUBSTACK_MAX_LEVEL`).
        static let maxSubstackDepth = 16
        static let maxIncludes = 256
        static let maxEntries = 1000

        /// `name` as named from `file`: an absolute path as it is, a relative one beside `file`.
        static func resolved(_ name: String, from file: String) -> String {
            guard !name.hasPrefix("/"), let slash = file.utf8.lastIndex(of: UInt8(ascii: "/")) else { return name }
            return String(file[...slash]) + name
        }

        mutating func parse(
            _ text: [UInt8],
            file: String,
            into configuration: inout StackConfiguration,
            entries: inout [Entry],
            depth: Int,
            including chain: [String]
        ) throws(ConfigurationError) {
            for line in try Self.lines(text, file: file) {
                let words = try Self.words(line, file: file)
                guard let first = words.first else { continue }
                let lineNumber = first.line
                let at = Location(file: file, line: lineNumber, column: first.column)
                // libpam reads its own words without regard to case (`INCLUDE`, and the controls); the
                // settings are this file's own, and read as written.
                let lowered = first.text.lowercased()
                let word = lowered == "include" || lowered == "substack" ? lowered : first.text
                switch StackConfiguration.settingNames.contains(word) ? "setting" : word {
                case "include", "substack":
                    guard words.count == 2 else {
                        throw ConfigurationError(
                            .syntax, at: at, word: first.text, "\(first.text) takes one file name")
                    }
                    // A relative name is the including file's neighbour, wherever the tool was started.
                    let path = Self.resolved(words[1].text, from: file)
                    let place = Location(file: file, line: words[1].line, column: words[1].column)
                    guard !chain.contains(path) else {
                        throw ConfigurationError(
                            .include, at: place, word: words[1].text,
                            "includes itself: \((chain + [path]).joined(separator: " -> "))")
                    }
                    // Bounded, so that files including each other many times over cannot keep a tool busy.
                    includesRead += 1
                    guard chain.count <= Self.maxIncludeDepth, includesRead <= Self.maxIncludes else {
                        throw ConfigurationError(
                            .include, at: place, word: words[1].text,
                            "more than \(Self.maxIncludes) includes, or includes \(Self.maxIncludeDepth) deep")
                    }
                    // A file that cannot be read is named where it is included: what goes to syslog is then a
                    // place in this file, never the name written there (which may be anything at all).
                    let contents: [UInt8]
                    do throws(ConfigurationError) {
                        contents = try read(path)
                    } catch  where error.location?.line == 0 {
                        throw ConfigurationError(.include, at: place, word: words[1].text, error.message)
                    }
                    if first.text.lowercased() == "substack" && depth + 1 >= Self.maxSubstackDepth {
                        throw ConfigurationError(
                            .include, at: place, word: words[1].text,
                            "substacks nest at most \(Self.maxSubstackDepth - 1) deep (libpam fails a deeper one)")
                    }
                    guard first.text.lowercased() == "substack" else {
                        try parse(
                            contents, file: path, into: &configuration, entries: &entries, depth: depth,
                            including: chain + [path])
                        continue
                    }
                    stackStarted = true
                    var inner: [Entry] = []
                    try parse(
                        contents, file: path, into: &configuration, entries: &inner, depth: depth + 1,
                        including: chain + [path])
                    entries.append(
                        Entry(
                            control: .substack, provider: path, options: [:], location: at, depth: depth,
                            substack: inner))
                case "setting":
                    guard depth == 0 else {
                        throw ConfigurationError(
                            .syntax, at: at, word: first.text, "a substack holds entries only, not settings")
                    }
                    guard !stackStarted else {
                        throw ConfigurationError(
                            .syntax, at: at, word: first.text, "settings come before the stack; move this line up")
                    }
                    let line = Setting(name: first.text, location: at, words: words)
                    try setting(line)
                    configuration.settings.append(line)
                default:
                    stackStarted = true
                    entriesRead += 1
                    guard entriesRead <= Self.maxEntries else {
                        throw ConfigurationError(
                            .syntax, at: at, word: first.text, "a stack has at most \(Self.maxEntries) entries")
                    }
                    entries.append(try entry(words, file: file, depth: depth))
                }
            }
        }

        /// A line's `name=value` words, each split once, with the bare words `flags` may name: a name not
        /// in `accepted`, a word that is neither, or a name given twice is refused.
        struct Values {
            var values: [String: (value: String, at: Location)] = [:]
            var flags: Set<String> = []

            /// `name`'s value read with `parse`, an ``ConfigurationError/invalid(expected:)`` one refused naming it.
            func value<T>(
                _ name: String,
                _ parse: (String) throws(ConfigurationError) -> T
            ) throws(ConfigurationError) -> T? {
                guard let (text, at) = values[name] else { return nil }
                do throws(ConfigurationError) {
                    return try parse(text)
                } catch {
                    throw ConfigurationError(
                        .value, at: at, word: text, "\(name) takes \(error.expected ?? error.message)")
                }
            }
        }

        static func values(
            _ words: ArraySlice<Word>,
            at location: (Word) -> Location,
            accepted: [String],
            flags: [String] = [],
            owner: String,
            acceptsAny: Bool = false,
            unknown: ((String) -> String)? = nil
        ) throws(ConfigurationError) -> Values {
            var result = Values()
            for word in words {
                if flags.contains(word.text) {
                    guard result.flags.insert(word.text).inserted else {
                        throw ConfigurationError(
                            .duplicate, at: location(word), word: word.text,
                            "\(ConfigurationError.shortened(word.text)) is given twice")
                    }
                    continue
                }
                guard let (name, value) = ConfigurationValue.pair(word.text) else {
                    throw ConfigurationError(.syntax, at: location(word), word: word.text, "expected name=value")
                }
                guard acceptsAny || accepted.contains(name) else {
                    let all = Self.sentence(accepted.map { "\($0)=" } + flags)
                    throw ConfigurationError(
                        .option, at: location(word), word: name, unknown?(name) ?? "\(owner) takes \(all)")
                }
                guard result.values[name] == nil else {
                    throw ConfigurationError(
                        .duplicate, at: location(word), word: name,
                        "\(ConfigurationError.shortened(name)) is given twice")
                }
                result.values[name] = (value, location(word))
            }
            return result
        }

        /// `a`, `a and b`, `a, b and c`.
        static func sentence(_ items: [String]) -> String {
            items.count <= 1 ? items.joined() : items.dropLast().joined(separator: ", ") + " and " + items.last!
        }

        static let month = Duration.seconds(30 * 86_400)

        private func entry(_ words: [Word], file: String, depth: Int) throws(ConfigurationError) -> Entry {
            func location(_ word: Word) -> Location { Location(file: file, line: word.line, column: word.column) }
            let control = try Self.control(words[0], at: location(words[0]))
            guard words.count >= 2 else {
                throw ConfigurationError(
                    .syntax, at: location(words[0]), word: words[0].text, "a provider's name must follow the control")
            }
            var name = words[1].text
            let toleratesMissing = name.hasPrefix("-") && name.count > 1
            if toleratesMissing { name.removeFirst() }
            let resolved: ProviderPluginDescriptor?
            do throws(ConfigurationError) {
                resolved = try registry.resolve(name)
            } catch {
                throw error.located(at: location(words[1]), word: name)
            }
            guard let plugin = resolved else {
                if toleratesMissing {
                    // Not installed here: its options cannot be known, only their form.
                    let given = try Self.values(
                        words.dropFirst(2), at: location, accepted: [], owner: name, acceptsAny: true)
                    var missing = Entry(
                        control: control, provider: name, options: given.values.mapValues(\.value),
                        location: location(words[0]), depth: depth, substack: [])
                    missing.toleratesMissing = true
                    missing.isMissing = true
                    return missing
                }
                throw ConfigurationError(
                    .provider, at: location(words[1]), word: name,
                    "unknown provider; available: \(registry.names.joined(separator: ", ")), or a plugin's path")
            }
            let accepted = plugin.options.map(\.name)
            let given = try Self.values(words.dropFirst(2), at: location, accepted: accepted, owner: plugin.name) {
                "\(plugin.name) has no option \(ConfigurationError.shortened($0)); its options: \(accepted.joined(separator: ", "))"
            }
            var options = given.values.mapValues(\.value)
            // A relative file is beside this file, as an include is: the same file means the same stack
            // wherever the tool was started, and whoever starts it cannot choose the file by the directory.
            for option in plugin.options where option.isPath {
                guard let value = options[option.name], !value.isEmpty else { continue }
                options[option.name] = Self.resolved(value, from: file)
            }
            var built = Entry(
                control: control, provider: name, options: options, location: location(words[0]), depth: depth,
                substack: [], optionLocations: given.values.mapValues(\.at))
            built.toleratesMissing = toleratesMissing
            return built
        }

        static let actions: [String: ChainControl.Action] = [
            "ignore": .ignore, "bad": .bad, "die": .die, "ok": .ok, "done": .done, "reset": .reset,
        ]

        /// A keyword, or PAM's bracket form read as `_pam_parse_control` reads it: `value=action` pairs
        /// (spaces around `=` allowed), `default` filling every code not named. What libpam would read
        /// another way — or read as "everything bad" — is refused: a code or `default` given twice, an
        /// unknown word, a jump that is not 1 to 2147483647 in digits.
        static func control(_ word: Word, at location: Location) throws(ConfigurationError) -> ChainControl {
            switch word.text.lowercased() {
            case "required": return .required
            case "requisite": return .requisite
            case "sufficient": return .sufficient
            case "optional": return .optional
            default: break
            }
            guard word.text.hasPrefix("["), word.text.hasSuffix("]") else {
                throw ConfigurationError(
                    .control, at: location, word: word.text,
                    "unknown control; expected required, requisite, sufficient, optional or [value=action …]")
            }
            let inside = Array(word.text.utf8.dropFirst().dropLast())
            var actions: [PAMResult: ChainControl.Action] = [:]
            var defaultAction: ChainControl.Action?
            var index = 0
            func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
            func skipSpaces() { while index < inside.count && isSpace(inside[index]) { index += 1 } }
            func token(until stop: (UInt8) -> Bool) -> (text: String, column: Int) {
                let start = index
                while index < inside.count && !stop(inside[index]) { index += 1 }
                // Columns count bytes, as everywhere in the file; the bracket is column 0 of `inside`.
                return (String(decoding: inside[start..<index], as: UTF8.self), location.column + 1 + start)
            }
            func place(_ column: Int) -> Location { Location(file: location.file, line: location.line, column: column) }
            while true {
                skipSpaces()
                guard index < inside.count else { break }
                let value = token { isSpace($0) || $0 == UInt8(ascii: "=") }
                skipSpaces()
                guard index < inside.count, inside[index] == UInt8(ascii: "=") else {
                    throw ConfigurationError(
                        .control, at: place(value.column), word: value.text, "expected value=action")
                }
                index += 1
                skipSpaces()
                let action = token(until: isSpace)
                guard !action.text.isEmpty else {
                    throw ConfigurationError(
                        .control, at: place(value.column), word: value.text, "expected value=action")
                }
                let parsed: ChainControl.Action
                if let named = Self.actions[action.text] {
                    parsed = named
                } else if let count = try? ConfigurationValue.count(action.text, in: 1...Int(Int32.max)) {
                    parsed = .jump(count)
                } else {
                    throw ConfigurationError(
                        .control, at: place(action.column), word: action.text,
                        "unknown action; expected ignore, bad, die, ok, done, reset or a jump from 1 to 2147483647")
                }
                if value.text == "default" {
                    // libpam keeps the first default (a later one fills no slot); rather than a meaning
                    // nobody reading the line would guess, a second one is refused, as a repeated key is.
                    guard defaultAction == nil else {
                        throw ConfigurationError(
                            .duplicate, at: place(value.column), word: "default",
                            "default is given twice (libpam would keep the first; keep one)")
                    }
                    defaultAction = parsed
                } else if let code = PAMResult(rawValue: value.text) {
                    guard actions[code] == nil else {
                        throw ConfigurationError(
                            .duplicate, at: place(value.column), word: value.text,
                            "\(value.text) is given twice (libpam would keep the last; keep one)")
                    }
                    actions[code] = parsed
                } else {
                    throw ConfigurationError(
                        .control, at: place(value.column), word: value.text,
                        "unknown value; expected default or one of PAM's return codes (success, auth_err, user_unknown, …)"
                    )
                }
            }
            return ChainControl(actions: actions, default: defaultAction ?? .bad)
        }
    }
}
