import CAPRUtilLoader
import CCryptLoader
import CLDAPLoader
import CLibraryLoader
import COathLoader
import CPAMLoader
import CPWQualityLoader
import CQREncodeLoader
import CUnicodeFold
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The backends' C libraries are loaded the first time they are called (Sources/CLibraries/CLibraryLoader): each
/// loader must find its library under the soname it names and every function it lists, and say which
/// library and which function when it cannot.
@Suite
struct LibraryLoaderTests {
    @Test func everyLoaderFindsItsLibraryAndEachFunction() {
        let loaders: [(String, (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> Int32)] = [
            ("libpam", { gatekeeper_pam_load($0) }),
            ("libcrypt", { gatekeeper_crypt_load($0) }),
            ("apr-util", { gatekeeper_aprutil_load($0) }),
            ("liboath", { gatekeeper_oath_load($0) }),
            ("libqrencode", { gatekeeper_qrencode_load($0) }),
            ("libunistring", { gatekeeper_unistring_load($0) }),
            ("libldap", { gatekeeper_ldap_load($0) }),
            ("libpwquality", { gatekeeper_pwquality_load($0) }),
        ]
        for (name, load) in loaders {
            var why: UnsafePointer<CChar>?
            let status = load(&why)
            #expect(status == 0, "\(name): \(why.map { String(cString: $0) } ?? "no reason")")
        }
    }

    @Test func aLibraryThatIsMissingIsNamedWithWhy() {
        var slot: UnsafeMutableRawPointer?
        var failure = [CChar](repeating: 0, count: 512)
        let names: [UnsafePointer<CChar>?] = [UnsafePointer(strdup("strlen"))]
        defer { names.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
        let status = names.withUnsafeBufferPointer { names in
            withUnsafeMutablePointer(to: &slot) { slots in
                gatekeeper_library_open(
                    "libgatekeeper-none.so.9", "a library nobody has", RTLD_LOCAL, names.baseAddress, slots, 1,
                    &failure,
                    failure.count)
            }
        }
        #expect(status == -1)
        #expect(slot == nil)
        let message = String(decoding: failure.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #expect(message.hasPrefix("libgatekeeper-none.so.9, a library nobody has, cannot be loaded: "), "\(message)")
    }

    @Test func aFunctionTheLibraryLacksIsNamed() {
        var slots: [UnsafeMutableRawPointer?] = [nil, nil]
        var failure = [CChar](repeating: 0, count: 512)
        let names: [UnsafePointer<CChar>?] = [UnsafePointer(strdup("strlen")), UnsafePointer(strdup("gk_no_such"))]
        defer { names.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
        let status = names.withUnsafeBufferPointer { names in
            slots.withUnsafeMutableBufferPointer { slots in
                gatekeeper_library_open(
                    "libc.so.6", "the C library", RTLD_LOCAL, names.baseAddress, slots.baseAddress, 2, &failure,
                    failure.count)
            }
        }
        #expect(status == -1)
        #expect(slots[0] != nil, "the functions before the missing one were found")
        #expect(
            String(decoding: failure.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                == "libc.so.6, the C library, has no gk_no_such")
    }

    @Test func theFoldLoadsItsLibraryOnFirstUse() {
        var length = 0
        let text = Array("ＡＬＩＣＥ".utf8)
        let folded = text.withUnsafeBufferPointer { gk_fold($0.baseAddress, $0.count, &length) }
        #expect(folded != nil)
        if let folded {
            #expect(String(decoding: UnsafeBufferPointer(start: folded, count: length), as: UTF8.self) == "alice")
            free(folded)
        }
    }
}
