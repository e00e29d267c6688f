import Testing

@testable import GatekeeperSupport

/// The standard library's `joined(separator:)`: in a generic context the package's `Array` version does
/// not apply.
private func standardJoined<Strings: BidirectionalCollection<String>>(_ strings: Strings, _ separator: String) -> String
{
    strings.joined(separator: separator)
}

struct JoinedTests {
    @Test(
        arguments: [
            [], [""], ["", ""], ["a"], ["a", "b", "c"], ["", "x", ""], ["wörd", "👩‍👩‍👧", "e\u{301}"],
            Array(repeating: "ab", count: 1000),
        ] as [[String]])
    func joinsAsTheStandardLibraryDoes(_ strings: [String]) {
        for separator in ["", " ", "\n", ", ", "\u{301}", "–––"] {
            #expect(strings.joined(separator: separator) == standardJoined(strings, separator))
            #expect(strings.joined(separator: separator).utf8.elementsEqual(standardJoined(strings, separator).utf8))
        }
        #expect(strings.joined() == standardJoined(strings, ""))
    }
}
