import Foundation
import Testing

/// Modules depend only downward (docs/layout.md), and the folders show it: Sources/ holds one folder per
/// layer, and each module's imports name modules of a lower layer, or of its own layer one ranked below it —
/// never a peer's or one above. Read from the sources' own `import` lines, so an import added without a
/// thought to where its module sits fails here.
struct LayeringTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        .standardized.path

    /// The layers, bottom first: each a folder of Sources/, and its modules by rank (a module may import one
    /// of a lower rank in its own layer). C modules (their names start with C and a capital) are
    /// Sources/CLibraries', under them all.
    static let layers: [(folder: String, ranks: [[String]])] = [
        ("CLibraries", []),
        ("Core", [["GatekeeperSupport"], ["Authentication"], ["BlockingPools", "AuthenticationTesting"]]),
        // The extension points: backends by name, password hashes, helper programs, plugins.
        ("Extensions", [["ProviderPlugins", "PasswordHashing"], ["HelperPrograms", "PluginHost", "PluginExport"]]),
        // What a host tool puts around a login, and assembles from its configuration.
        (
            "Host",
            [
                ["TerminalLogin", "TerminalQRCode", "HostProtection", "OfflineCache"],
                ["ToolSupport", "GatekeeperHost"],
            ]
        ),
        // The backends: none may import another (a module named …Provider is one); what two share sits below.
        // Above them, the one list of the backends the tools offer: it assembles them, as the tools do.
        (
            "Backends",
            [
                [
                    "MockProvider", "DebugProvider", "FileProvider", "OTPProvider", "OIDCProvider", "PAMProvider",
                    "LDAPProvider",
                ],
                ["GatekeeperBackends"],
            ]
        ),
        // The tools' commands, which the tools' mains call, and the daemon: they assemble everything;
        // gatekeeper-passwd's manage two backends' files (FileProvider's users file, OTPProvider's pam_oath file).
        ("Commands", [["GatekeeperCommands", "PasswdCommands"]]),
        ("Daemon", [["GatekeeperDaemon"]]),
    ]

    /// Each library module's folder and place: (layer, rank), compared in that order. Commands and Daemon are
    /// one layer: neither imports the other.
    static let places: [String: (folder: String, place: [Int])] = {
        var places: [String: (folder: String, place: [Int])] = [:]
        for (layer, (folder, ranks)) in layers.enumerated() {
            for (rank, modules) in ranks.enumerated() {
                for module in modules { places[module] = (folder, [folder == "Daemon" ? layer - 1 : layer, rank]) }
            }
        }
        return places
    }()

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

    @Test(arguments: places.keys.sorted())
    func importsGoOnlyDown(_ module: String) throws {
        let (folder, place) = try #require(Self.places[module])
        let directory = "\(Self.root)/Sources/\(folder)/\(module)"
        try #require(FileManager.default.fileExists(atPath: directory), "\(module) is not in Sources/\(folder)")
        for imported in try Self.imports(of: directory) where imported != module {
            if Self.backends.contains(imported) && !Self.assemblers.contains(module) {
                Issue.record("\(module) imports \(imported), a backend of its own")
            } else if let other = Self.places[imported], !other.place.lexicographicallyPrecedes(place) {
                let below = "\(imported) (Sources/\(other.folder), \(other.place))"
                Issue.record("\(module) (Sources/\(folder), \(place)) imports \(below), not below it")
            }
        }
    }

    /// Every folder of Sources/ is a layer, and every module in it has its place above — C modules in
    /// CLibraries, and no other module there — so a new one cannot escape the check.
    @Test func everyModuleHasALayer() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: "\(Self.root)/Sources")
        #expect(Set(folders) == Set(Self.layers.map(\.folder)), "Sources/ holds \(folders.sorted())")
        for folder in folders {
            for name in try FileManager.default.contentsOfDirectory(atPath: "\(Self.root)/Sources/\(folder)") {
                if folder == "CLibraries" {
                    #expect(Self.isCModule(name), "Sources/CLibraries/\(name) is no C module")
                } else if folder == "Daemon" && name == "PAMModule" {
                    continue  // pam_gatekeeper.so's C source, built by make (not a SwiftPM module).
                } else {
                    #expect(
                        Self.places[name]?.folder == folder, "Sources/\(folder)/\(name) has no place in LayeringTests")
                }
            }
        }
    }
}
