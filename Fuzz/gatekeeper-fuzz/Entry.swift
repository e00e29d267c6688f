// Built two ways. With `make fuzz` (-sanitize=fuzzer, GATEKEEPER_FUZZ) libFuzzer drives the target named
// by GATEKEEPER_FUZZ_TARGET. Built as usual, it replays inputs: `gatekeeper-fuzz TARGET FILE|DIR...` runs
// each file once, which is how the committed corpus (Fuzz/corpus/TARGET) stays a regression test.
import Foundation

#if GATEKEEPER_FUZZ
    nonisolated(unsafe) private var selected: FuzzTarget?

    /// The program's entry (SwiftPM links an executable's `main` to `<module>_main`): hands the command
    /// line to libFuzzer's driver, found with dlsym so it is called with C's calling convention.
    @_cdecl("gatekeeper_fuzz_main")
    public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        typealias Callback = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
        typealias Driver =
            @convention(c) (
                UnsafeMutablePointer<Int32>, UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                Callback
            ) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "LLVMFuzzerRunDriver") else {
            FileHandle.standardError.write(Data("gatekeeper-fuzz: built without libFuzzer\n".utf8))
            return 2
        }
        var count = argc
        var vector = argv
        return unsafeBitCast(symbol, to: Driver.self)(&count, &vector, fuzzOneInput)
    }

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        if selected == nil {
            let name = ProcessInfo.processInfo.environment["GATEKEEPER_FUZZ_TARGET"] ?? ""
            guard let target = FuzzTarget(rawValue: name) else {
                let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
                FileHandle.standardError.write(Data("set GATEKEEPER_FUZZ_TARGET to one of: \(names)\n".utf8))
                exit(2)
            }
            selected = target
        }
        selected!.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
    }
#else
    @main
    struct Replay {
        static func main() {
            let arguments = CommandLine.arguments.dropFirst()
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
                let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
                FileHandle.standardError.write(Data("usage: gatekeeper-fuzz \(names) FILE|DIRECTORY...\n".utf8))
                exit(2)
            }
            var count = 0
            for path in arguments.dropFirst() {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    FileHandle.standardError.write(Data("gatekeeper-fuzz: \(path): no such file\n".utf8))
                    exit(1)
                }
                let files =
                    isDirectory.boolValue
                    ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map {
                        path + "/" + $0
                    }
                    : [path]
                for file in files {
                    guard let data = FileManager.default.contents(atPath: file) else { continue }
                    target.run(Array(data))
                    count += 1
                }
            }
            print("\(name): \(count) inputs, no property broken")
        }
    }
#endif
