import Authentication

extension MockAuthProvider {
    /// The demonstration accounts of `gatekeeper-run` and `gatekeeper-repl`, listed in the README.
    ///
    /// | user  | password     | groups       | standing            |
    /// |-------|--------------|--------------|---------------------|
    /// | alice | wonderland   | staff, admin | active              |
    /// | bob   | builder      | staff        | active              |
    /// | carol | carol-2026   |              | activation required |
    /// | dave  | dave-2026    | staff        | locked              |
    /// | erin  | erin-2026    | staff        | password expired    |
    public static let demoUsers: [User] = [
        User(
            username: "alice", password: demoPassword("wonderland"), displayName: "Alice Liddell",
            groups: ["staff", "admin"]),
        User(username: "bob", password: demoPassword("builder"), displayName: "Bob the Builder", groups: ["staff"]),
        User(
            username: "carol", password: demoPassword("carol-2026"), displayName: "Carol", status: .activationRequired),
        User(
            username: "dave", password: demoPassword("dave-2026"), displayName: "Dave", groups: ["staff"],
            status: .locked),
        User(
            username: "erin", password: demoPassword("erin-2026"), displayName: "Erin", groups: ["staff"],
            status: .passwordChangeRequired),
    ]

    private static func demoPassword(_ text: StaticString) -> Secret {
        Secret(copying: UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
