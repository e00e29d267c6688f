/// A protected action: content that runs only for an identity meeting a requirement.
///
/// The closure form of a "requires authentication" container. Build it once with the requirement, what
/// to do when the login is dismissed, and the content; run it through a ``Gatekeeper`` with a conversation
/// (the ``Conversation`` that shows the login):
///
/// ```swift
/// let courses = RequiresAuthentication(.signedIn) {
///     previousTab.restore()                    // the parent decides where to go back to
/// } content: { identity in
///     try await listCourses(for: identity)
/// }
/// switch try await courses.run(through: gatekeeper, conversation: terminal) {
/// case .completed(let list): show(list)
/// case .dismissed(let reason): print(reason)
/// }
/// ```
///
/// The content starts only after the gatekeeper admitted an identity that meets the requirement. When
/// the login is dismissed instead — the person cancelled, the task was cancelled, the attempts ran out,
/// the identity is not authorized, or the backend is unavailable — `onAuthenticationDismissed` runs
/// exactly once and the content never runs.
public struct RequiresAuthentication<Output: Sendable>: Sendable {
    /// What the identity must meet.
    public let requirement: Requirement
    @usableFromInline let onAuthenticationDismissed: @Sendable (AuthError) async -> Void
    @usableFromInline let content: @Sendable (Identity) async throws -> Output

    /// - Parameters:
    ///   - requirement: What the identity must meet; ``Requirement/signedIn`` by default.
    ///   - onAuthenticationDismissed: Runs once when the login is dismissed, with the reason; the place to
    ///     send the person back where they were.
    ///   - content: The protected action.
    public init(
        _ requirement: Requirement = .signedIn,
        onAuthenticationDismissed: @escaping @Sendable (AuthError) async -> Void = { _ in },
        content: @escaping @Sendable (Identity) async throws -> Output
    ) {
        self.requirement = requirement
        self.onAuthenticationDismissed = onAuthenticationDismissed
        self.content = content
    }

    /// Runs the content for an admitted identity, presenting the login if needed.
    /// - Returns: ``Access/completed(_:)`` with the content's result, or ``Access/dismissed(_:)`` with why
    ///   the content did not run.
    /// - Throws: only what the content throws.
    ///
    /// Generic over the conversation, so that a signed-in call passes it on to nothing and pays for no
    /// existential box around it; a login boxes it.
    @inlinable
    public func run(through gatekeeper: Gatekeeper, conversation: some Conversation) async throws -> Access<Output> {
        // The signed-in fast path returns the content's result itself, not wrapped with a trace it never has:
        // the check every protected action makes stays as cheap as it was (`make bench`, protected / bare).
        if let identity = gatekeeper.identityIfAdmitted(requirement) {
            return .completed(try await content(identity))
        }
        return try await runWithTrace(through: gatekeeper, conversation: conversation).outcome
    }

    /// ``run(through:conversation:)``, answered with how the stack decided the login it took (the trace of
    /// ``Gatekeeper/authorizeWithTrace(_:conversation:)``): `nil` when a session let the content run at
    /// once, or when no stack answered.
    @inlinable
    public func runWithTrace(through gatekeeper: Gatekeeper, conversation: some Conversation) async throws
        -> Traced<Access<Output>>
    {
        // The signed-in fast path is a synchronous call; only a login needs the asynchronous one.
        if let identity = gatekeeper.identityIfAdmitted(requirement) {
            return Traced(.completed(try await content(identity)))
        }
        let login = await gatekeeper.loginUntilAdmitted(requirement, conversation: conversation)
        switch login.outcome {
        case .success(let identity):
            return Traced(.completed(try await content(identity)), trace: login.trace)
        case .failure(let error):
            await onAuthenticationDismissed(error)
            return Traced(.dismissed(error), trace: login.trace)
        }
    }
}

/// How a protected action ended.
public enum Access<Output: Sendable>: Sendable {
    /// The content ran and returned this.
    case completed(Output)
    /// The content did not run; the error says why (``AuthError/cancelled`` when the person backed out).
    case dismissed(AuthError)

    /// The content's result, if it ran.
    public var output: Output? {
        if case .completed(let output) = self { output } else { nil }
    }
}

extension Gatekeeper {
    /// Wraps an existing action so that it runs only for an admitted identity: the modifier form of
    /// ``RequiresAuthentication``.
    ///
    /// ```swift
    /// let deploy = gatekeeper.requiresAuthentication(.member(of: "ops"), conversation: terminal) { identity in
    ///     try await runDeployment(as: identity)
    /// }
    /// let result = try await deploy()   // Access<Void>
    /// ```
    public func requiresAuthentication<Output: Sendable>(
        _ requirement: Requirement = .signedIn,
        conversation: any Conversation,
        onAuthenticationDismissed: @escaping @Sendable (AuthError) async -> Void = { _ in },
        _ action: @escaping @Sendable (Identity) async throws -> Output
    ) -> @Sendable () async throws -> Access<Output> {
        let protected = RequiresAuthentication(
            requirement,
            onAuthenticationDismissed: onAuthenticationDismissed,
            content: action
        )
        return { try await protected.run(through: self, conversation: conversation) }
    }
}
