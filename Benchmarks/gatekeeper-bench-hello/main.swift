// The floor gatekeeper-run --help is measured against (make bench): a Swift program that prints one line,
// linked as the tools are.
print("hello")
