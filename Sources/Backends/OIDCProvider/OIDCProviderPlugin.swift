public import Authentication
public import ProviderPlugins

/// `oidc issuer=URL client_id=ID [client_secret_file=PATH] [client_auth=basic|post] [flow=device|password] [scopes=a,b]
/// [username_claim=CLAIM] [groups_claim=CLAIM] [ca=PATH] [timeout=DURATION] [tokens=DIR] [allow_http=yes]`.
public enum OIDCProviderPlugin: AuthProviderPlugin {
    public static let name = "oidc"
    public static let summary = "people of an OpenID Connect provider: device login in a browser, or a password"
    public static let options = [
        ProviderOption(
            "issuer", valueName: "URL", help: "the provider's issuer, exactly as it names itself (required)"),
        ProviderOption("client_id", valueName: "ID", help: "this tool's client at the provider (required)"),
        ProviderOption(
            "client_secret_file", valueName: "PATH", help: "a private file holding a confidential client's secret"),
        ProviderOption(
            "client_auth", valueName: "basic|post",
            help: "send the secret in HTTP Basic or in the form (default: as the provider's metadata says)"),
        ProviderOption(
            "flow", valueName: "device|password",
            help: "approve in a browser with a code (default), or send the password typed"),
        ProviderOption("scopes", valueName: "SCOPE,...", help: "asked for besides openid (default profile,email)"),
        ProviderOption(
            "username_claim", valueName: "CLAIM", help: "the claim holding the user name (default preferred_username)"),
        ProviderOption("groups_claim", valueName: "CLAIM", help: "the claim holding the groups (default groups)"),
        ProviderOption("ca", valueName: "PATH", help: "the CA certificates to check the provider against"),
        ProviderOption("timeout", valueName: "DURATION", help: "each request, such as 10s (default 10s)"),
        ProviderOption(
            "tokens", valueName: "DIR",
            help: "keep refresh tokens here (private), for remembered logins and revocation at sign-out"),
        ProviderOption(
            "allow_http", valueName: "yes|no", help: "allow http:// for an issuer on a loopback address (default no)"),
        ProviderOption(
            "qr", valueName: "yes|no", help: "show the device login's URL as a QR code (default: on a UTF-8 terminal)"),
    ]

    public static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        guard let issuer = options["issuer"] else { throw .missingOption("issuer", provider: name) }
        guard let clientID = options["client_id"], !clientID.isEmpty else {
            throw .missingOption("client_id", provider: name)
        }
        var configuration = OIDCAuthProvider.Configuration(issuer: issuer, clientID: clientID)
        if let flow = options["flow"] {
            guard let chosen = OIDCAuthProvider.Configuration.Flow(rawValue: flow) else {
                throw .invalidValue(option: "flow", value: flow, expected: "device or password")
            }
            configuration.flow = chosen
        }
        if let scopes = try options.list("scopes") {
            configuration.scopes = ["openid"] + scopes.filter { $0 != "openid" }
        }
        if let claim = options["username_claim"] { configuration.usernameClaim = claim }
        if let claim = options["groups_claim"] { configuration.groupsClaim = claim }
        configuration.caFile = try options.value("ca", ConfigurationValue.absolutePath)
        if let timeout = try options.duration("timeout", in: .milliseconds(100) ... .seconds(300)) {
            configuration.timeout = timeout
        }
        configuration.allowsPlainHTTP = try options.boolean("allow_http") ?? false
        configuration.showsQRCode = try options.boolean("qr")
        configuration.tokenDirectory = try options.value("tokens", ConfigurationValue.absolutePath)
        configuration.clientSecret = try options.secretFile("client_secret_file", provider: name)
        if let method = options["client_auth"] {
            guard let chosen = OIDCAuthProvider.Configuration.ClientAuthentication(rawValue: method) else {
                throw .invalidValue(option: "client_auth", value: method, expected: "basic or post")
            }
            configuration.clientAuthentication = chosen
        }
        if let reason = OIDCAuthProvider.libraryProblem { throw .unusable(provider: name, reason: reason) }
        do throws(OIDCConfigurationProblem) {
            return try OIDCAuthProvider(configuration)
        } catch {
            throw .unusable(provider: name, reason: error.description)
        }
    }
}
