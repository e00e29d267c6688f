/// An error of this package: a ``code`` to act on, details for messages and decisions, and a
/// `description` a person reads.
///
/// Two errors are equal, and hash alike, when their codes are: a caller matches `error.code == .cancelled`
/// or `error == .cancelled` without knowing a detail such as a reason's wording. Tests that mean a detail
/// (a ``AuthError/retryAfter``, a ``AuthError/reason``) check it on its own.
///
/// Every error a caller of the package's products can catch is one. Two types that conform to `Error` are
/// not, on purpose: ``PasswordChangeRefusal`` is the reason inside a change's outcome, never thrown (an
/// `Error` only so that a `Result` can carry it), and its cases are its codes. Errors kept inside a module
/// (`package` or internal: a state file's, a private file's, a helper's, an HTTP exchange's) become one of
/// these at the module's edge, so nobody outside meets them.
public protocol CodedError: Error, Hashable, Sendable, CustomStringConvertible {
    associatedtype Code: Hashable & Sendable & CustomStringConvertible
    /// What went wrong.
    var code: Code { get }
}

extension CodedError {
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// A code of one error type (`Domain`): a name, compared by it and printed as it.
///
/// Each error type names its codes in an extension (`extension ErrorCode where Domain == AuthError`), so
/// new ones can be added without breaking anyone: a `switch` over a code needs a `default`. Only this
/// package makes codes.
public struct ErrorCode<Domain>: Hashable, Sendable, CustomStringConvertible {
    public let description: String

    package init(_ name: String) { description = name }
}
