import Authentication
import GatekeeperSupport

/// The tabs of the demonstration, as in a tabbed app: two public, two for any signed-in user, one for
/// members of the `admin` group.
enum Tab: String, CaseIterable, Sendable {
    case home
    case contact
    case courses
    case profile
    case admin

    /// What the identity must meet to open the tab; `nil` for a public tab.
    var requirement: Requirement? {
        switch self {
        case .home, .contact: nil
        case .courses, .profile: .signedIn
        case .admin: .member(of: "admin")
        }
    }

    /// What the tab needs, for `tabs`.
    var access: String {
        switch self {
        case .home, .contact: "public"
        case .courses, .profile: "sign in"
        case .admin: "group admin"
        }
    }

    /// The tab's content. Protected tabs are only ever rendered with the admitted identity.
    func content(for identity: Identity?) -> String {
        // Names and groups come from the backend (a users file, a directory): escaped as a whole.
        shown(rawContent(for: identity))
    }

    private func rawContent(for identity: Identity?) -> String {
        switch self {
        case .home:
            return """
                Welcome to Gatekeeper University.
                Public: home, contact. Sign in for courses and profile; admin is for the admin group.
                """
        case .contact:
            return """
                Registrar's office: registrar@gatekeeper.example, +1 555 0100.
                Open Monday to Friday, 9:00 to 17:00.
                """
        case .courses:
            let name = identity?.displayName ?? "you"
            return """
                Courses for \(name):
                  SEC-101  Passwords, hashes and why timing matters
                  SYS-220  Linux PAM in practice
                  SWF-310  Structured concurrency and cancellation
                """
        case .profile:
            guard let identity else { return "" }
            var lines = [
                "Name:      \(identity.displayName)",
                "User:      \(identity.username)",
                "Groups:    \(identity.groups.isEmpty ? "(none)" : identity.groups.sorted().joined(separator: ", "))",
                "Provider:  \(identity.provider)",
            ]
            for (key, value) in identity.attributes.sorted(by: { $0.key < $1.key }) {
                lines.append("\((key + ":").padded(to: 10))\(value)")
            }
            return lines.joined(separator: "\n")
        case .admin:
            return """
                Admin console (signed in as \(identity?.username ?? "?")).
                  Users: 5   Locked: 1   Awaiting activation: 1   Password expired: 1
                """
        }
    }
}
