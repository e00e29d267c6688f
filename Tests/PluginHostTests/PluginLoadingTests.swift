import Authentication
import AuthenticationTesting
import Foundation
import PluginHost
import ProviderPlugins
import TestSupport
import Testing

/// What a host refuses to load, and what it does with a plugin that blocks.
@Suite(.timeLimit(.minutes(2)))
struct PluginLoadingTests {
    let directory: String

    init() throws { directory = try pluginDirectory() }

    func refusal(_ path: String) -> String? {
        refused(path)?.reason
    }

    func refused(_ path: String) -> PluginLoadError? {
        do {
            _ = try SharedObjectPlugin.load(path)
            return nil
        } catch {
            return error
        }
    }

    @Test func unsafeFilesAreRefusedBeforeTheyAreLoaded() throws {
        let plugin = try ExamplePlugins.cPlugin(in: directory)
        // A relative path: through the configuration's resolver, and directly.
        #expect(throws: ConfigurationError.self) { try SharedObjectPlugins.resolver()("plugins/c-example.so") }
        #expect(refusal("c-example.so")?.contains("not an absolute path") == true)
        // Writable by others.
        chmod(plugin, 0o757)
        #expect(refusal(plugin)?.contains("may be written by group or others") == true)
        chmod(plugin, 0o755)
        // In a directory others may write (sticky or not).
        let shared = temporaryDirectory("gatekeeper-plugin-shared")
        chmod(shared, 0o1777)
        try FileManager.default.copyItem(atPath: plugin, toPath: shared + "/copy.so")
        #expect(refusal(shared + "/copy.so")?.contains("may be written by group or others") == true)
        // Not a regular file.
        try FileManager.default.createDirectory(atPath: directory + "/dir.so", withIntermediateDirectories: false)
        #expect(refusal(directory + "/dir.so")?.contains("not a regular file") == true)
        #expect(refusal(directory + "/missing.so")?.contains("cannot be found") == true)
        // Each refusal's code says what to do about it: name a file that is there, or make it safe.
        #expect(refused(directory + "/missing.so")?.code == .notFound)
        #expect(refused("c-example.so")?.code == .notFound)
        #expect(refused(shared + "/copy.so")?.code == .untrusted)
        #expect(refused(directory + "/dir.so")?.code == .untrusted)
    }

    @Test func aShortNameIsLookedForInThePluginDirectory() throws {
        _ = try ExamplePlugins.cPlugin(in: directory)
        let resolve = SharedObjectPlugins.resolver(directory: directory)
        #expect(try resolve("c-example")?.name == "c-example")
        #expect(try resolve("not-installed") == nil)
        #expect(try resolve("mock") == nil)  // Not a file there: left to the names compiled in.
    }

    @Test(.enabled(if: getuid() == 0, "chowns a plugin to another user: needs root (CI runs as root)"))
    func aFileOwnedBySomeoneElseIsRefused() throws {
        let plugin = try ExamplePlugins.cPlugin(in: directory)
        chown(plugin, 65534, 65534)
        #expect(refusal(plugin)?.contains("is owned by uid 65534") == true)
    }

    @Test func aMissingEntryPointOrAnotherABIVersionIsRefusedBeforeAnyCall() throws {
        let marker = directory + "/called"
        let noEntry = try ExamplePlugins.compile(
            "int something_else(void) { return 0; }\n", into: directory, named: "no-entry.so")
        #expect(refusal(noEntry)?.contains("has no entry point gatekeeper_plugin_entry") == true)
        #expect(refused(noEntry)?.code == .incompatible)
        // A table of version 99, whose create would leave a mark if anything called it.
        let future = try ExamplePlugins.compile(
            """
            #include <stdio.h>
            #include "gatekeeper_plugin.h"
            static void *create(const char *const *n, const char *const *v, size_t c, char **e) {
                FILE *f = fopen("\(marker)", "w"); if (f) fclose(f); return 0;
            }
            static const struct gk_plugin table = { .abi_version = 99, .size = sizeof(struct gk_plugin),
                .name = "future", .create = create };
            const struct gk_plugin *gatekeeper_plugin_entry(void) { return &table; }
            """, into: directory, named: "future.so")
        #expect(refusal(future) == "speaks plugin ABI version 99; this host speaks version 1")
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test func cancellingALoginReturnsAtOnceAndTellsThePlugin() async throws {
        let log = directory + "/cancel.log"
        // Blocks after the password until the host cancels it (or a minute passes).
        let stubborn = try ExamplePlugins.compile(
            """
            #include <stdio.h>
            #include <string.h>
            #include <unistd.h>
            #include "gatekeeper_plugin.h"
            static volatile int cancelled;
            static void note(const char *what) { FILE *f = fopen("\(log)", "a"); if (f) { fputs(what, f); fclose(f); } }
            static void *create(const char *const *n, const char *const *v, size_t c, char **e) { return (void *)1; }
            static int authenticate(void *i, const char *u, const struct gk_conversation *c, struct gk_outcome *o) {
                const char *answer; size_t length;
                memset(o, 0, sizeof *o);
                if (c->ask(c->context, GK_ASK_HIDDEN, "Password: ", &answer, &length) != GK_OK) { o->kind = GK_OUTCOME_CANCELLED; return 0; }
                note("waiting\\n");
                for (int t = 0; t < 6000 && !cancelled; t++) usleep(10000);
                note(cancelled ? "cancel called\\n" : "never cancelled\\n");
                o->kind = GK_OUTCOME_AUTHENTICATED;
                return 0;
            }
            static void cancel(void *i, void *context) { cancelled = 1; }
            static const struct gk_plugin table = { .abi_version = GK_PLUGIN_ABI_VERSION, .size = sizeof(struct gk_plugin),
                .name = "stubborn", .create = create, .authenticate = authenticate, .cancel = cancel };
            const struct gk_plugin *gatekeeper_plugin_entry(void) { return &table; }
            """, into: directory, named: "stubborn.so")
        let provider = try SharedObjectPlugin.load(stubborn).makeProvider(ProviderOptions())
        let login = Task {
            try await provider.authenticate(
                AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("anything"))))
        }
        #expect(await eventually { (try? String(contentsOfFile: log, encoding: .utf8))?.contains("waiting") == true })
        login.cancel()
        // Cancelled at once, not authenticated when the plugin answers late.
        await #expect(throws: AuthError.cancelled) { try await login.value }
        #expect(
            await eventually { (try? String(contentsOfFile: log, encoding: .utf8))?.contains("cancel called") == true })
    }

    @Test func aConfigurationNamesAPluginByPathAndTheToolLoadsIt() throws {
        let plugin = try ExamplePlugins.cPlugin(in: directory)
        let config = directory + "/plugin.conf"
        try "delay 0\nrequired \(plugin) users=alice:wonderland\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o600)
        let state = temporaryDirectory("gatekeeper-plugin-state")
        let admitted = try run(
            builtExecutable("gatekeeper-run"),
            [
                "--config", config, "--state-dir", state, "--user", "alice", "--password-stdin", "--", "sh", "-c",
                "echo $GATEKEEPER_PROVIDER",
            ],
            input: "wonderland\n")
        #expect(admitted.status == 0 && admitted.stdout == "c-example\n", "\(admitted.stderr)")
        let refused = try run(
            builtExecutable("gatekeeper-run"),
            ["--config", config, "--state-dir", state, "--user", "alice", "--password-stdin", "--", "true"],
            input: "wrong\n")
        #expect(refused.status == 77)
        // An option the plugin does not take is refused where it is written.
        try "required \(plugin) user=alice\n".write(toFile: config, atomically: true, encoding: .utf8)
        let check = try run(builtExecutable("gatekeeper-run"), ["--check-config", config], input: "")
        #expect(
            check.status == 1
                && check.stderr.contains("plugin.conf:1:\(11 + plugin.count): user: c-example has no option user"))
        // A plugin in a directory others may write is refused before it is loaded.
        let shared = temporaryDirectory("gatekeeper-plugin-shared")
        chmod(shared, 0o1777)
        try FileManager.default.copyItem(atPath: plugin, toPath: shared + "/x.so")
        try "required \(shared)/x.so users=a:b\n".write(toFile: config, atomically: true, encoding: .utf8)
        let unsafe = try run(builtExecutable("gatekeeper-run"), ["--check-config", config], input: "")
        #expect(unsafe.status == 1 && unsafe.stderr.contains("may be written by group or others"))
    }
}
