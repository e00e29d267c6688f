// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "swift-gatekeeper",
    products: [
        .library(name: "Authentication", targets: ["Authentication"]),
        .library(name: "BlockingPools", targets: ["BlockingPools"]),
        .library(name: "ProviderPlugins", targets: ["ProviderPlugins"]),
        .library(name: "AuthenticationTesting", targets: ["AuthenticationTesting"]),
        .library(name: "TerminalLogin", targets: ["TerminalLogin"]),
        .library(name: "ToolSupport", targets: ["ToolSupport"]),
        .library(name: "GatekeeperHost", targets: ["GatekeeperHost"]),
        .library(name: "HostProtection", targets: ["HostProtection"]),
        .library(name: "PluginHost", targets: ["PluginHost"]),
        .library(name: "PluginExport", targets: ["PluginExport"]),
        .library(name: "HelperPrograms", targets: ["HelperPrograms"]),
        .library(name: "PasswordHashing", targets: ["PasswordHashing"]),
        // The example plugin written in Swift: a shared object a host loads at run time.
        .library(name: "GatekeeperExamplePlugin", type: .dynamic, targets: ["ExampleSwiftPlugin"]),
        .library(name: "MockProvider", targets: ["MockProvider"]),
        .library(name: "DebugProvider", targets: ["DebugProvider"]),
        .library(name: "PAMProvider", targets: ["PAMProvider"]),
        .library(name: "FileProvider", targets: ["FileProvider"]),
        .library(name: "OTPProvider", targets: ["OTPProvider"]),
        .library(name: "LDAPProvider", targets: ["LDAPProvider"]),
        .library(name: "OIDCProvider", targets: ["OIDCProvider"]),
        .library(name: "OfflineCache", targets: ["OfflineCache"]),
        .executable(name: "gatekeeper-run", targets: ["gatekeeper-run"]),
        .executable(name: "gatekeeper-repl", targets: ["gatekeeper-repl"]),
        .executable(name: "gatekeeper-passwd", targets: ["gatekeeper-passwd"]),
        .executable(name: "gatekeeper-pam-helper", targets: ["gatekeeper-pam-helper"]),
        .executable(name: "gatekeeperd", targets: ["gatekeeperd"]),
    ],
    targets: [
        // The core: AuthProvider, Conversation, Secret, Identity, AuthError, Gatekeeper, RequiresAuthentication.
        .target(name: "Authentication", dependencies: ["GatekeeperSupport"], path: "Sources/Core/Authentication"),
        // What several modules share without making it public API (`package` access): locked state, private
        // files and state directories, child processes and signal threads, SHA-256, random bytes. In no
        // product of its own. (The bounded pools of threads for blocking C work are BlockingPools'.)
        .target(name: "GatekeeperSupport", dependencies: ["CProcessSpawn"], path: "Sources/Core/GatekeeperSupport"),
        // The threads blocking C work runs on, apart from Swift's cooperative pool: BlockingPool (bounded, its
        // idle threads lent between pools), ProcessPools (every process-wide pool, by role, sizable before
        // first use), and the bridge between such work and the task that awaits it. Below every backend, beside
        // the core rather than in it: the core's gatekeeper never blocks a thread.
        .target(
            name: "BlockingPools", dependencies: ["Authentication", "GatekeeperSupport", "CProcessSpawn"],
            path: "Sources/Core/BlockingPools"),
        // Provider plugins: a backend by name, built from key=value options, and the one error a
        // configuration gives (where it was written, the option, the word). The extension point that command
        // lines, configuration files and run-time loading use; neither the core's inner API nor a terminal
        // concern. (A configuration file's grammar is GatekeeperHost's.)
        .target(
            name: "ProviderPlugins", dependencies: ["Authentication", "GatekeeperSupport"],
            path: "Sources/Extensions/ProviderPlugins"),
        // Test doubles and the provider conformance suite, for host tools and for this package's tests.
        .target(
            name: "AuthenticationTesting", dependencies: ["Authentication", "GatekeeperSupport"],
            path: "Sources/Core/AuthenticationTesting"),
        // A Conversation on the controlling terminal (echo off, Ctrl-C / Ctrl-D cancel), its line editor and
        // the terminal's restoration. (The command line's provider options are ToolSupport's.)
        .target(
            name: "TerminalLogin", dependencies: ["Authentication", "BlockingPools", "GatekeeperSupport"],
            path: "Sources/Host/TerminalLogin"),
        // What a host tool needs around every login: failed logins counted in pam_faillock's files, logins
        // remembered for a terminal session, and audit sinks (syslog, a hash-chained JSON log).
        .target(
            name: "HostProtection", dependencies: ["Authentication", "GatekeeperSupport", "CUnicodeFold"],
            path: "Sources/Host/HostProtection"),
        // Unicode's NFKC case fold, from libunistring (Debian libunistring-dev): the form the lockout counts
        // names no backend recognised under.
        .target(name: "CUnicodeFold", dependencies: ["CLibraryLoader"], path: "Sources/CLibraries/CUnicodeFold"),
        // The C ABI of shared-object provider plugins (gatekeeper_plugin.h).
        .target(name: "CGatekeeperPlugin", path: "Sources/CLibraries/CGatekeeperPlugin"),
        // glibc's spawn extensions that Swift's Glibc module leaves out (close every descriptor from N).
        .target(name: "CProcessSpawn", path: "Sources/CLibraries/CProcessSpawn"),
        // gatekeeperd's wire format (gatekeeper_wire.h): every number the daemon and pam_gatekeeper.so write and
        // read, in the one header both include.
        .target(name: "CGatekeeperWire", path: "Sources/CLibraries/CGatekeeperWire"),
        // Loading plugins at run time: shared objects through that ABI.
        .target(
            name: "PluginHost",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "ProviderPlugins", "CGatekeeperPlugin",
            ],
            path: "Sources/Extensions/PluginHost"
        ),
        // Helper programs a login runs: checkpassword's interface, and the whole conversation in JSON lines
        // (the protocol the PAM provider's isolating helper speaks too), both sides of it.
        .target(
            name: "HelperPrograms",
            dependencies: ["Authentication", "BlockingPools", "GatekeeperSupport", "ProviderPlugins", "CProcessSpawn"],
            path: "Sources/Extensions/HelperPrograms"
        ),
        // Password hashes (libxcrypt's schemes, apr-util's legacy ones) and the one pool they are checked
        // on: the users file's, the offline cache's verifiers.
        .target(
            name: "PasswordHashing",
            dependencies: ["Authentication", "BlockingPools", "GatekeeperSupport", "CCryptLoader", "CAPRUtilLoader"],
            path: "Sources/Extensions/PasswordHashing"
        ),
        // For plugins written in Swift: exports an AuthProvider through the C ABI.
        .target(
            name: "PluginExport",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "ProviderPlugins", "CGatekeeperPlugin",
            ],
            path: "Sources/Extensions/PluginExport"
        ),
        .target(
            name: "ExampleSwiftPlugin",
            dependencies: ["Authentication", "PluginExport", "ProviderPlugins"],
            path: "Examples/plugins/swift",
            // The plugin's own copies of the modules it links are the ones it calls, whatever the host exports.
            linkerSettings: [.unsafeFlags(["-Xlinker", "-Bsymbolic"])]
        ),
        // What the command-line tools share: provider selection by option, usage errors, exit statuses,
        // messages on standard error, the signal state a command gets back before exec.
        .target(
            name: "ToolSupport",
            dependencies: ["Authentication", "GatekeeperSupport", "ProviderPlugins", "TerminalLogin"],
            path: "Sources/Host/ToolSupport"
        ),
        // A host's configuration file, whole: its grammar (StackConfiguration: a stack of backends and the
        // setting lines before it), what its settings mean (StackSettings), what `--check-config` says of it;
        // and what a host tool assembles from it — the stack, the lockout, the login cache, the fail delay,
        // the audit sinks — around the one admission path every tool uses (HostLogin).
        .target(
            name: "GatekeeperHost",
            dependencies: ["Authentication", "GatekeeperSupport", "HostProtection", "ProviderPlugins"],
            path: "Sources/Host/GatekeeperHost"
        ),

        // The backends the host tools offer by name: the one list of them (docs/layout.md, "Adding a
        // backend").
        .target(
            name: "GatekeeperBackends",
            dependencies: [
                "ProviderPlugins", "MockProvider", "PAMProvider", "FileProvider", "DebugProvider", "HelperPrograms",
                "OTPProvider", "LDAPProvider", "OIDCProvider", "PluginHost",
            ], path: "Sources/Backends/GatekeeperBackends"
        ),

        // The tools' commands: each command line read into an action value, and what each action does
        // (`perform`), above everything a host assembles; each tool's main calls one of them. gatekeeper-run's
        // and gatekeeper-repl's offer every backend; gatekeeper-passwd's manage two files only, and link
        // nothing else (a tool of half the size, which starts sooner).
        .target(
            name: "GatekeeperCommands",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "HostProtection", "ProviderPlugins",
                "TerminalLogin",
                "ToolSupport",
                "GatekeeperHost", "GatekeeperBackends", "OfflineCache",
            ], path: "Sources/Commands/GatekeeperCommands"
        ),
        // gatekeeperd: the stacks of /etc/gatekeeper/pam.d served to pam_gatekeeper.so (Sources/Daemon/PAMModule/) on a Unix
        // socket, each login through HostLogin's admission path.
        .target(
            name: "GatekeeperDaemon",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "HostProtection", "ProviderPlugins",
                "ToolSupport",
                "GatekeeperHost", "GatekeeperBackends", "OfflineCache", "CProcessSpawn", "CGatekeeperWire",
            ], path: "Sources/Daemon/GatekeeperDaemon"
        ),
        .target(
            name: "PasswdCommands",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "TerminalLogin", "ToolSupport", "FileProvider",
                "OTPProvider",
                "PasswordHashing",
            ], path: "Sources/Commands/PasswdCommands"
        ),

        // Provider plugins: each depends on the core (and the pools its blocking C calls run on) only, never on
        // another provider.
        .target(
            name: "MockProvider", dependencies: ["Authentication", "GatekeeperSupport", "ProviderPlugins"],
            path: "Sources/Backends/MockProvider"),
        .target(
            name: "DebugProvider", dependencies: ["Authentication", "ProviderPlugins"],
            path: "Sources/Backends/DebugProvider"),
        .target(
            name: "PAMProvider",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "ProviderPlugins", "HelperPrograms",
                "CPAMLoader",
            ],
            path: "Sources/Backends/PAMProvider"
        ),
        .target(
            name: "FileProvider",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "ProviderPlugins", "PasswordHashing",
                "CPWQualityLoader",
            ],
            path: "Sources/Backends/FileProvider"
        ),

        .target(
            name: "OTPProvider",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "ProviderPlugins", "COathLoader",
                "TerminalQRCode",
            ],
            path: "Sources/Backends/OTPProvider"
        ),

        .target(
            name: "LDAPProvider",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "ProviderPlugins", "OfflineCache",
                "CLDAPLoader",
            ],
            path: "Sources/Backends/LDAPProvider"
        ),

        .target(
            name: "OIDCProvider",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "ProviderPlugins", "COIDCLoader",
                "TerminalQRCode",
            ],
            path: "Sources/Backends/OIDCProvider"
        ),

        // Logins checked against a cache of recent successes while a backend is unreachable; wraps any
        // provider (its verifiers are yescrypt hashes).
        .target(
            name: "OfflineCache",
            dependencies: ["Authentication", "BlockingPools", "GatekeeperSupport", "PasswordHashing"],
            path: "Sources/Host/OfflineCache"),

        // C libraries from Debian. Each library a backend calls is loaded the first time it is called, not
        // linked (Sources/CLibraryLoader): linked, apr-util, liboath, libqrencode, libunistring and libcrypt
        // cost every run of every tool about 1 ms and 1 MiB, and libpam 0.4 ms and 0.4 MiB more. Their
        // headers come from the -dev packages (make build-deps).
        .target(
            name: "CLibraryLoader", path: "Sources/CLibraries/CLibraryLoader", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "CCryptLoader", dependencies: ["CLibraryLoader"], path: "Sources/CLibraries/CCryptLoader"),
        .target(name: "CAPRUtilLoader", dependencies: ["CLibraryLoader"], path: "Sources/CLibraries/CAPRUtilLoader"),
        .target(name: "COathLoader", dependencies: ["CLibraryLoader"], path: "Sources/CLibraries/COathLoader"),
        .target(name: "CQREncodeLoader", dependencies: ["CLibraryLoader"], path: "Sources/CLibraries/CQREncodeLoader"),
        .target(name: "CPAMLoader", dependencies: ["CLibraryLoader"], path: "Sources/CLibraries/CPAMLoader"),
        // libpam linked, for the tests' and the benchmark's raw libpam calls (libpam0g-dev).
        .systemLibrary(name: "CPAM", path: "Benchmarks/CPAM", pkgConfig: "pam", providers: [.apt(["libpam0g-dev"])]),

        // libpwquality (pam_pwquality's checks, for new passwords of a users file), loaded the first time a
        // password is checked, for the same reason as libldap. Its header comes from libpwquality-dev.
        .target(
            name: "CPWQualityLoader", dependencies: ["CLibraryLoader"], path: "Sources/CLibraries/CPWQualityLoader"),

        .systemLibrary(name: "CLDAP", path: "Benchmarks/CLDAP", pkgConfig: "ldap", providers: [.apt(["libldap-dev"])]),
        // libldap loaded when the first LDAP provider is made, not linked: linked, it (and GnuTLS with it)
        // costs every run of every tool about 2 ms of start-up. Its headers come from libldap-dev.
        .target(name: "CLDAPLoader", dependencies: ["CLibraryLoader"], path: "Sources/CLibraries/CLDAPLoader"),
        // libcurl and OpenSSL's libcrypto, loaded when the first OpenID Connect provider is made, for the
        // same reason. Headers from libcurl4-openssl-dev and libssl-dev.
        .target(name: "COIDCLoader", dependencies: ["CLibraryLoader"], path: "Sources/CLibraries/COIDCLoader"),
        // A QR code drawn with text (libqrencode), for the one-time codes' enrolment and the device login.
        .target(name: "TerminalQRCode", dependencies: ["CQREncodeLoader"], path: "Sources/Host/TerminalQRCode"),

        // Executables.
        .executableTarget(
            name: "gatekeeper-pam-helper",
            dependencies: ["PAMProvider"],
            path: "Tools/gatekeeper-pam-helper"
        ),
        .executableTarget(name: "gatekeeper-run", dependencies: ["GatekeeperCommands"], path: "Tools/gatekeeper-run"),
        .executableTarget(name: "gatekeeper-repl", dependencies: ["GatekeeperCommands"], path: "Tools/gatekeeper-repl"),
        .executableTarget(
            name: "gatekeeper-passwd", dependencies: ["PasswdCommands"], path: "Tools/gatekeeper-passwd"),
        .executableTarget(name: "gatekeeperd", dependencies: ["GatekeeperDaemon"], path: "Tools/gatekeeperd"),
        .executableTarget(
            name: "gatekeeper-bench",
            dependencies: [
                "Authentication", "BlockingPools", "AuthenticationTesting", "MockProvider", "PAMProvider",
                "CPAMBaseline",
                "FileProvider", "CCryptLoader", "HostProtection", "PluginHost", "ProviderPlugins",
                "gatekeeper-pam-helper", "LDAPProvider", "CLDAPBaseline", "DebugProvider", "GatekeeperSupport",
                "OIDCProvider", "COIDCBaseline", "HelperPrograms", "PasswordHashing", "GatekeeperDaemon",
                "GatekeeperHost", "GatekeeperBackends", "gatekeeperd",
            ],
            path: "Benchmarks/gatekeeper-bench",
            // The raw crypt_r the users file is measured against.
            linkerSettings: [.linkedLibrary("crypt")]
        ),
        // The floor of a Swift tool's start-up that gatekeeper-run --help is measured against: one line printed.
        .executableTarget(name: "gatekeeper-bench-hello", path: "Benchmarks/gatekeeper-bench-hello"),
        // The floor of a whole-process PAM login: raw libpam calls and exec, in Swift, nothing else; and of
        // gatekeeper-passwd add: a bcrypt hash and a durable write, nothing else.
        .executableTarget(
            name: "gatekeeper-bench-floor", dependencies: ["CPAMBaseline", "CCryptLoader"],
            path: "Benchmarks/gatekeeper-bench-floor"),
        // The fuzz targets (make fuzz), and in ordinary builds the replayer of their corpus.
        .executableTarget(
            name: "gatekeeper-fuzz",
            dependencies: [
                "Authentication", "ProviderPlugins", "MockProvider", "DebugProvider", "FileProvider", "PAMProvider",
                "HostProtection", "PluginHost", "LDAPProvider", "OIDCProvider", "HelperPrograms",
                "AuthenticationTesting", "GatekeeperHost", "GatekeeperDaemon",
            ],
            path: "Fuzz/gatekeeper-fuzz"
        ),
        // The raw libcurl requests the OpenID Connect provider is measured against.
        .target(
            name: "COIDCBaseline", path: "Benchmarks/COIDCBaseline", linkerSettings: [.linkedLibrary("curl")]),
        // The raw libldap calls the LDAP provider is measured against.
        .target(name: "CLDAPBaseline", dependencies: ["CLDAP"], path: "Benchmarks/CLDAPBaseline"),
        // The raw libpam calls the PAM provider is measured against.
        .target(
            name: "CPAMBaseline",
            dependencies: ["CPAM"],
            path: "Benchmarks/CPAMBaseline",
            linkerSettings: [.linkedLibrary("pam")]
        ),

        // Tests: one target per module, and helpers they share (in no product).
        .target(
            name: "TestSupport", dependencies: ["Authentication", "BlockingPools", "GatekeeperSupport"],
            path: "Tests/Support"),
        .testTarget(
            name: "AuthenticationTests",
            // The attempt ledger's tests count in pam_faillock's files too (HostProtection's FaillockStore).
            dependencies: ["Authentication", "AuthenticationTesting", "HostProtection", "TestSupport"]
        ),
        .testTarget(
            name: "BlockingPoolsTests",
            dependencies: ["Authentication", "BlockingPools", "GatekeeperSupport", "TestSupport"]
        ),
        .testTarget(
            name: "MockProviderTests",
            dependencies: ["Authentication", "AuthenticationTesting", "MockProvider", "DebugProvider", "TestSupport"]
        ),
        .testTarget(
            name: "PAMProviderTests",
            dependencies: [
                "Authentication", "AuthenticationTesting", "PAMProvider", "ProviderPlugins", "TestSupport",
                "gatekeeper-run", "FileProvider", "MockProvider", "gatekeeper-pam-helper", "PasswordHashing",
            ]
        ),
        .testTarget(
            name: "PasswordHashingTests",
            dependencies: [
                "Authentication", "BlockingPools", "AuthenticationTesting", "GatekeeperSupport", "OfflineCache",
                "PasswordHashing",
                "TestSupport",
            ]
        ),
        .testTarget(
            name: "FileProviderTests",
            dependencies: [
                "Authentication", "AuthenticationTesting", "FileProvider", "TestSupport", "gatekeeper-passwd",
                "gatekeeper-run", "PasswordHashing",
            ]
        ),
        .testTarget(
            name: "ProviderChainTests",
            dependencies: [
                "Authentication", "AuthenticationTesting", "DebugProvider", "MockProvider", "CPAM", "TestSupport",
                "GatekeeperHost",
            ],
            linkerSettings: [.linkedLibrary("pam")]
        ),
        .testTarget(
            name: "GatekeeperSupportTests",
            dependencies: [
                "Authentication", "BlockingPools", "GatekeeperSupport", "TestSupport", "CLibraryLoader", "CPAMLoader",
                "CCryptLoader",
                "CAPRUtilLoader",
                "COathLoader", "CQREncodeLoader", "CUnicodeFold", "CLDAPLoader", "CPWQualityLoader",
            ]
        ),
        .testTarget(
            name: "LDAPProviderTests",
            dependencies: [
                "Authentication", "AuthenticationTesting", "LDAPProvider", "OfflineCache", "HostProtection",
                "ProviderPlugins", "TestSupport", "gatekeeper-run", "GatekeeperHost",
            ]
        ),
        .testTarget(
            name: "OfflineCacheTests",
            dependencies: ["Authentication", "AuthenticationTesting", "OfflineCache", "TestSupport"]
        ),
        .testTarget(
            name: "OIDCProviderTests",
            dependencies: [
                "Authentication", "AuthenticationTesting", "OIDCProvider", "ProviderPlugins", "TestSupport",
                "gatekeeper-run",
            ]
        ),
        .testTarget(
            name: "OTPProviderTests",
            dependencies: [
                "Authentication", "AuthenticationTesting", "OTPProvider", "PAMProvider", "ProviderPlugins",
                "TestSupport",
                "FileProvider", "gatekeeper-run", "gatekeeper-passwd", "gatekeeper-repl", "PasswordHashing",
            ]
        ),
        .testTarget(
            name: "PluginHostTests",
            dependencies: [
                "Authentication", "AuthenticationTesting", "HelperPrograms", "PluginHost", "ProviderPlugins",
                "TestSupport", "gatekeeper-run",
            ]
        ),
        .testTarget(
            name: "PluginExportTests",
            dependencies: [
                "Authentication", "BlockingPools", "PluginExport", "ProviderPlugins", "CGatekeeperPlugin",
                "TestSupport",
            ]
        ),
        .testTarget(
            name: "HostProtectionTests",
            dependencies: [
                "Authentication", "AuthenticationTesting", "HostProtection", "MockProvider", "FileProvider",
                "PAMProvider", "GatekeeperSupport", "ProviderPlugins", "ToolSupport", "GatekeeperHost", "TestSupport",
                "gatekeeper-run", "gatekeeper-repl", "gatekeeper-passwd", "PasswordHashing",
            ]
        ),
        .testTarget(
            name: "TerminalLoginTests",
            dependencies: ["Authentication", "GatekeeperSupport", "TerminalLogin", "TestSupport"]
        ),
        .testTarget(
            name: "ToolSupportTests",
            dependencies: ["Authentication", "ProviderPlugins", "ToolSupport", "TestSupport", "gatekeeper-fuzz"]
        ),
        .testTarget(
            name: "GatekeeperHostTests",
            dependencies: [
                "Authentication", "AuthenticationTesting", "GatekeeperHost", "HostProtection", "MockProvider",
                "DebugProvider", "ProviderPlugins", "TestSupport", "gatekeeper-run",
            ]
        ),
        .testTarget(
            name: "HelperProgramsTests",
            dependencies: [
                "Authentication", "AuthenticationTesting", "HelperPrograms", "PluginHost", "ProviderPlugins",
                "TestSupport", "gatekeeper-run",
            ]
        ),
        .testTarget(
            name: "GatekeeperRunTests",
            dependencies: [
                "gatekeeper-run", "gatekeeper-passwd", "TestSupport", "GatekeeperCommands", "PasswdCommands",
                "GatekeeperBackends", "Authentication", "GatekeeperSupport", "ToolSupport", "ProviderPlugins",
                "HostProtection",
            ]
        ),
        .testTarget(name: "GatekeeperREPLTests", dependencies: ["gatekeeper-repl", "TestSupport"]),
        // gatekeeperd over its socket, and pam_gatekeeper.so (Sources/Daemon/PAMModule/) under pamtester, sudo and su.
        .testTarget(
            name: "GatekeeperDaemonTests",
            dependencies: [
                "gatekeeperd", "gatekeeper-passwd", "GatekeeperDaemon", "TestSupport", "Authentication",
                "GatekeeperSupport",
            ]
        ),
        // The manual pages and the bash completion, against the tools as built.
        .testTarget(
            name: "PackagingTests",
            dependencies: [
                "gatekeeper-run", "gatekeeper-passwd", "gatekeeper-repl", "TestSupport", "ProviderPlugins",
                "GatekeeperBackends", "GatekeeperCommands", "PasswdCommands", "GatekeeperHost", "gatekeeperd",
            ]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where [.regular, .executable, .test].contains(target.type) {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
