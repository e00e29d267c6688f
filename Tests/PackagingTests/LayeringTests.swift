import Foundation
import Testing

/// Modules depend only downward (docs/layout.md): each module's imports name modules of a lower layer, never a
/// peer's or one above. Read from the sources' own `import` lines, so an import added without a thought
/// to where its module sits fails here.
struct LayeringTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        .standardized.path

    /// Each library module's layer; C modules (their names start with C and a capital) sit under them all.
    static let layers: [String: Int] = [
        "GatekeeperSupport": 0,
        "Authentication": 1,
        "ProviderPlugins": 2, "AuthenticationTesting": 2, "TerminalLogin": 2, "HostProtection": 2,
        "PasswordHashing": 2, "TerminalQRCode": 2,
        // The backends: none may import another (a module named …Provider is one); what two share sits below.
        "MockProvider": 3, "DebugProvider": 3, "FileProvider": 3, "OTPProvider": 3, "OIDCProvider": 3,
        "HelperPrograms": 3, "OfflineCache": 3, "PluginHost": 3, "PluginExport": 3,
        "PAMProvider": 4, "LDAPProvider": 4,
        "ToolSupport": 5, "GatekeeperHost": 5,
        // The one list of the backends the tools offer: it assembles them, as the tools do.
        "GatekeeperBackends": 6,
        // The tools' commands, which the tools' mains call: they assemble everything; gatekeeper-passwd's
        // manage two backends' files (FileProvider's users file, OTPProvider's pam_oath file).
        "GatekeeperCommands": 7, "PasswdCommands": 7, "GatekeeperDaemon": 7,
    ]

    /// The modules that may import a backend: the list of them, and the commands that manage their files.
    static let assemblers: Set<String> = ["GatekeeperBackends", "PasswdCommands"]

    /// Kinds of login: a module never imports one of these (the tools, which assemble them, are not checked).
    static let backends: Set<String> = [
        "MockProvider", "DebugProvider", "FileProvider", "OTPProvider", "OIDCProvider", "PAMProvider", "LDAPProvider",
        "PluginHost", "PluginExport",
    ]

    static func imports(of directory: String) throws -> Set<String> {
        var found = Set<String>()
        let files = try FileManager.default.subpathsOfDirectory(atPath: directory).filter { $0.hasSuffix(".swift") }
        for file in files {
            let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ")
                guard let index = words.firstIndex(of: "import"), index + 1 < words.count,
                    words[..<index].allSatisfy({ ["public", "package", "internal", "@testable"].contains($0) })
                else { continue }
                found.insert(String(words[index + 1]))
            }
        }
        return found
    }

    static func isCModule(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        return scalars.count > 1 && scalars[0] == "C" && ("A"..."Z").contains(scalars[1])
    }

    @Test(arguments: layers.keys.sorted())
    func importsGoOnlyDown(_ module: String) throws {
        let directory = ["Sources", "Plugins"].map { "\(Self.root)/\($0)/\(module)" }
            .first { FileManager.default.fileExists(atPath: $0) }
        let found = try #require(directory, "no directory for \(module)")
        let layer = try #require(Self.layers[module])
        for imported in try Self.imports(of: found) where imported != module {
            if Self.backends.contains(imported) && !Self.assemblers.contains(module) {
                Issue.record("\(module) imports \(imported), a backend of its own")
            } else if let other = Self.layers[imported], other >= layer {
                Issue.record("\(module) (layer \(layer)) imports \(imported) (layer \(other)), not below it")
            }
        }
    }

    /// Every library module under Sources/ and Plugins/ has a layer above, so a new one cannot escape the check.
    @Test func everyModuleHasALayer() throws {
        for top in ["Sources", "Plugins"] {
            for name in try FileManager.default.contentsOfDirectory(atPath: "\(Self.root)/\(top)")
            where !Self.isCModule(name) {
                #expect(Self.layers[name] != nil, "\(top)/\(name) has no layer in LayeringTests")
            }
        }
    }
}
