import Authentication
import AuthenticationTesting
import Foundation
import PluginHost
import ProviderPlugins
import TestSupport
import Testing

/// A directory for plugins: see ``trustedDirectory()``.
func pluginDirectory() throws -> String { try trustedDirectory() }

struct PluginFixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The example plugins, built for the tests: the C one with gcc, the Swift one as SwiftPM built it.
enum ExamplePlugins {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized.path

    /// Compiles C `source` (a file of the repository, or text) into `directory/name`.
    static func compile(_ source: String, into directory: String, named name: String, flags: String = "") throws
        -> String
    {
        let output = directory + "/" + name
        let include = repository + "/Sources/CLibraries/CGatekeeperPlugin/include"
        let (status, messages) = try shell(
            "cc -shared -fPIC -O1 -Wall -Werror \(flags) -I '\(include)' -o '\(output)' -x c - && chmod 755 '\(output)'",
            input: source)
        guard status == 0 else { throw PluginFixtureError("cc failed:\n\(messages)") }
        return output
    }

    static func cPlugin(in directory: String) throws -> String {
        try compile(
            String(contentsOfFile: repository + "/Examples/plugins/c/example_plugin.c", encoding: .utf8),
            into: directory, named: "c-example.so")
    }

    static func swiftPlugin(in directory: String) throws -> String {
        let built = builtExecutable("libGatekeeperExamplePlugin.so").path
        guard FileManager.default.fileExists(atPath: built) else {
            throw PluginFixtureError("\(built) is missing; swift build builds it")
        }
        let copy = directory + "/swift-example.so"
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: built, toPath: copy)
        chmod(copy, 0o755)
        return copy
    }
}

@Suite(.timeLimit(.minutes(2)))
struct SharedObjectPluginTests {
    static let directory = Result { try pluginDirectory() }
    static let cPath = Result { try ExamplePlugins.cPlugin(in: try directory.get()) }
    static let swiftPath = Result { try ExamplePlugins.swiftPlugin(in: try directory.get()) }
    static let users: ProviderOptions = ProviderOptions(["users": "alice:wonderland,bob:builder"])

    static let cSuite = ProviderConformance(fixture: .init(username: "alice", password: "wonderland")) {
        try SharedObjectPlugin.load(try cPath.get()).makeProvider(users)
    }
    static let swiftSuite = ProviderConformance(fixture: .init(username: "bob", password: "builder")) {
        try SharedObjectPlugin.load(try swiftPath.get()).makeProvider(users)
    }

    @Test(arguments: ProviderConformance.checks)
    func theCPluginConforms(_ check: ProviderConformance.Check) async {
        #expect(await Self.cSuite.run(check) == [])
    }

    @Test(arguments: ProviderConformance.checks)
    func theSwiftPluginConforms(_ check: ProviderConformance.Check) async {
        #expect(await Self.swiftSuite.run(check) == [])
    }

    @Test func aPluginDescribesItselfAndItsOptions() throws {
        let c = try SharedObjectPlugin.load(try Self.cPath.get())
        #expect(c.name == "c-example" && c.options.map(\.name) == ["users"])
        let swift = try SharedObjectPlugin.load(try Self.swiftPath.get())
        #expect(swift.name == "swift-example" && swift.summary.contains("Swift"))
        // Loading a file twice gives the plugin loaded first.
        #expect(try SharedObjectPlugin.load(try Self.cPath.get()) === c)
        // The plugin's own message when it cannot start.
        #expect {
            try c.makeProvider(ProviderOptions([:]))
        } throws: { error in
            "\(error)".contains("users= is required")
        }
        #expect {
            try swift.makeProvider(ProviderOptions([:]))
        } throws: { error in
            "\(error)".contains("needs --users")
        }
    }

    /// A users= entry written without its colon may be a password: the plugins' messages never quote it.
    @Test func aMalformedUsersEntryIsNotQuoted() throws {
        for path in [try Self.cPath.get(), try Self.swiftPath.get()] {
            let plugin = try SharedObjectPlugin.load(path)
            #expect {
                try plugin.makeProvider(ProviderOptions(["users": "bob:builder,alicewonderland"]))
            } throws: { error in
                !"\(error)".contains("wonderland") && "\(error)".contains("name:password")
            }
        }
    }

    @Test func anIdentityComesBackWithItsGroups() async throws {
        for path in [try Self.cPath.get(), try Self.swiftPath.get()] {
            let provider = try SharedObjectPlugin.load(path).makeProvider(Self.users)
            let outcome = try await provider.authenticate(
                AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("wonderland"))))
            guard case .authenticated(let identity) = outcome else {
                Issue.record("\(path): \(outcome)")
                continue
            }
            #expect(identity.groups == ["plugin-users"] && identity.provider == provider.name)
        }
    }
}
