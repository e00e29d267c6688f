public import Authentication
import OfflineCache
public import ProviderPlugins

/// `ldap uri=URI[,URI…] base=DN [filter=…] [binddn=DN bindpw_file=PATH] [tls=starttls|none] [ca=PATH]
/// [timeout=DURATION] [groupbase=DN]`.
public enum LDAPProviderPlugin: AuthProviderPlugin {
    public static let name = "ldap"
    public static let summary = "accounts in an LDAP directory (OpenLDAP, 389-ds, Active Directory)"
    public static let options = [
        ProviderOption("uri", valueName: "URI,...", help: "ldaps:// or ldap:// servers, tried in order (required)"),
        ProviderOption("base", valueName: "DN", help: "where users are searched (required)"),
        ProviderOption(
            "filter", valueName: "FILTER", help: "the search, %s the escaped name (default posixAccount uid)"),
        ProviderOption("binddn", valueName: "DN", help: "the service account (anonymous when absent)"),
        ProviderOption("bindpw_file", valueName: "PATH", help: "a private file holding its password"),
        ProviderOption("tls", valueName: "starttls|none", help: "StartTLS on ldap:// URIs (default starttls)"),
        ProviderOption("ca", valueName: "PATH", help: "the CA certificates to check servers against"),
        ProviderOption(
            "timeout", valueName: "DURATION", help: "connect and operation timeout, such as 5s or 500ms (default 5s)"),
        ProviderOption("groupbase", valueName: "DN", help: "where posixGroup entries are searched (default base)"),
        ProviderOption(
            "groups", valueName: "memberof,memberuid",
            help: "where groups come from: the entry's memberOf, posixGroup memberUid, or both (default)"),
        ProviderOption(
            "connections", valueName: "N", help: "connections kept open between logins, at most (default 8)"),
        ProviderOption(
            "offline_cache", valueName: "DIR",
            help: "keep verifiers of recent logins here for when every server is down"),
        ProviderOption(
            "offline_max_age", valueName: "AGE", help: "how old a cached login may be, e.g. 7d (default 7d)"),
        ProviderOption(
            "offline_refresh", valueName: "AGE",
            help: "recheck a cached account this often while a server answers, e.g. 15m (default 15m)"),
    ]

    public static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        let uris = try options.value("uri") { text throws(ConfigurationError) in
            try ConfigurationValue.list(text).map { uri throws(ConfigurationError) in
                try ConfigurationValue.uri(uri, schemes: ["ldap", "ldaps"])
            }
        }
        guard let uris else { throw .missingOption("uri", provider: name) }
        guard let base = options["base"] else { throw .missingOption("base", provider: name) }
        var configuration = LDAPAuthProvider.Configuration(uris: uris, base: base)
        if let filter = options["filter"] {
            guard filter.contains("%s") else {
                throw .invalidValue(option: "filter", value: filter, expected: "a filter with %s for the user name")
            }
            configuration.filter = filter
        }
        switch options["tls"] ?? "starttls" {
        case "starttls": configuration.requiresTLS = true
        case "none": configuration.requiresTLS = false
        case let other: throw .invalidValue(option: "tls", value: other, expected: "starttls or none")
        }
        configuration.caFile = options["ca"]
        configuration.groupBase = options["groupbase"]
        if let timeout = try options.duration("timeout") { configuration.timeout = timeout }
        if let sources = try options.value(
            "groups",
            { text throws(ConfigurationError) in
                try ConfigurationValue.list(text).map { word throws(ConfigurationError) in
                    guard let source = LDAPAuthProvider.Configuration.GroupSource(rawValue: word) else {
                        throw ConfigurationError.invalid(expected: "memberof, memberuid, or both")
                    }
                    return source
                }
            })
        {
            configuration.groupSources = Set(sources)
        }
        if let count = try options.count("connections", in: 1...256) { configuration.connections = count }
        if let dn = options["binddn"] {
            guard let password = try options.secretFile("bindpw_file", provider: name) else {
                throw .missingOption("bindpw_file", provider: name)
            }
            configuration.bindDN = dn
            configuration.bindPassword = password
        }
        if let reason = LDAPAuthProvider.libraryProblem { throw .unusable(provider: name, reason: reason) }
        let provider = LDAPAuthProvider(configuration)
        let maxAge =
            try options.duration("offline_max_age", in: .seconds(1) ... .seconds(90 * 86_400)) ?? .seconds(7 * 86_400)
        let refresh =
            try options.duration("offline_refresh", in: .seconds(60) ... .seconds(90 * 86_400)) ?? .seconds(15 * 60)
        guard let cache = try options.value("offline_cache", ConfigurationValue.absolutePath) else { return provider }
        do throws(AuthError) {
            return try OfflineCachingProvider(
                wrapping: provider, directory: cache, maxAge: maxAge, refreshInterval: refresh)
        } catch {
            throw .unusable(provider: name, reason: error.reason ?? error.description)
        }
    }
}
