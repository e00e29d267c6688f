"""The start-up layout from callgrind profiles (Packaging/startup-order.sh).

    startup-order.py BUILD_DIRECTORY PROFILE_DIRECTORY > startup-order.txt
    startup-order.py --check BUILD_DIRECTORY startup-order.txt

Reads each profile (NAME.TOOL.PID[.N], in the order of NAME), keeps the functions of TOOL's own binary
that ran, and writes each symbol once, in the order first seen, leaving out a symbol that any tool defines
more than once or in a code section over 64 KiB, and one in the same section as a symbol listed before
(its link map, BUILD_DIRECTORY/TOOL.map, says which).

With --check (make test-package), fails unless gatekeeper-run and gatekeeper-passwd in BUILD_DIRECTORY
were linked in that order — each one's code begins with the section of the list's first function it has,
and the list's first functions follow at rising addresses — and at least half of
the list still names functions of the tools (below that, the list is stale: make startup-order).
"""

import collections
import os
import re
import subprocess
import sys

SECTION_LIMIT = 64 * 1024
# VMA, LMA, size, alignment, then the name indented: an output section by 0, an input section by 8, a
# symbol by 16.
MAP_LINE = re.compile(r"^\s*([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+(\d+) (\s*)(\S.*)$")
NAMED = re.compile(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$")


def code_sections(map_path):
    """Each symbol's input code section (where it came from, and its size), from an lld link map."""
    sizes, output, section = {}, None, None
    with open(map_path, errors="replace") as lines:
        for line in lines:
            match = MAP_LINE.match(line.rstrip("\n"))
            if not match:
                continue
            size, depth, name = int(match.group(3), 16), len(match.group(5)), match.group(6)
            if depth == 0:
                output, section = name, None
            elif depth <= 8:
                section = (name, size)
            elif output == ".text" and section is not None:
                sizes.setdefault(name, section)
    return sizes


def function_symbols(binary):
    """Each function symbol of a binary's symbol table (locals included): (name, address)."""
    listing = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True)
    for line in listing.stdout.splitlines():
        fields = line.split(None, 2)
        if len(fields) == 3 and fields[1] in "tTwW":
            yield fields[2], int(fields[0], 16)


def definitions(binary):
    """How many times each function name is defined in a binary."""
    return collections.Counter(name for name, _ in function_symbols(binary))


def functions_run(profile, tool):
    """The functions of `tool`'s binary in one callgrind profile, in the order the file names them."""
    objects, functions, found = {}, {}, []
    current_object = called_object = None
    with open(profile, errors="replace") as lines:
        for line in lines:
            match = NAMED.match(line.rstrip("\n"))
            if not match:
                continue
            kind, number, name = match.groups()
            table = objects if kind.endswith("ob") else functions
            if name:
                table[number] = name
            if kind == "ob":
                current_object = objects.get(number)
            elif kind == "cob":
                called_object = objects.get(number)
            else:
                owner = current_object if kind == "fn" else (called_object or current_object)
                if kind == "cfn":
                    called_object = None
                symbol = functions.get(number)
                if symbol and owner and os.path.basename(owner) == tool:
                    # callgrind marks a recursion level with 'N; the symbol is the name before it.
                    found.append(re.sub(r"'\d+$", "", symbol))
    return found


def addresses(binary):
    """Each function name's address in a binary, and the start of its code section."""
    found = {}
    for name, address in function_symbols(binary):
        found.setdefault(name, address)
    sections = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    text = re.search(r"\]\s+\.text\s+PROGBITS\s+([0-9a-f]+)", sections)
    return found, int(text.group(1), 16)


def check(build, order_path):
    with open(order_path) as lines:
        order = [line.strip() for line in lines if line.strip()]
    run, text_start = addresses(os.path.join(build, "gatekeeper-run"))
    passwd, passwd_start = addresses(os.path.join(build, "gatekeeper-passwd"))
    present = [symbol for symbol in order if symbol in run or symbol in passwd]
    problems = []
    if len(present) * 2 < len(order):
        problems.append(
            f"only {len(present)} of the {len(order)} functions it lists are in the tools: it is stale "
            "(make startup-order writes it anew)")
    for tool, found, start in (("gatekeeper-run", run, text_start), ("gatekeeper-passwd", passwd, passwd_start)):
        placed = [found[symbol] for symbol in order if symbol in found][:50]
        # The first function's section begins the code; the function may stand after others of its section.
        if not placed or not start <= placed[0] < start + SECTION_LIMIT or placed != sorted(placed):
            problems.append(f"{tool} was not linked in its order (--symbol-ordering-file)")
    for problem in problems:
        print(f"startup-order: {order_path}: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"startup-order: {len(present)} of {len(order)} functions present, the tools laid out in order")


def main():
    if len(sys.argv) != 3 and not (len(sys.argv) == 4 and sys.argv[1] == "--check"):
        sys.exit(__doc__.split("\n\n")[1])
    if sys.argv[1] == "--check":
        check(sys.argv[2], sys.argv[3])
        return
    build, profiles = sys.argv[1], sys.argv[2]
    tools = sorted({name.split(".")[1] for name in os.listdir(profiles)})
    sections = {tool: code_sections(os.path.join(build, tool + ".map")) for tool in tools}
    defined = {tool: definitions(os.path.join(build, tool)) for tool in tools}
    order, seen, placed, left_out = [], set(), set(), collections.Counter()
    for profile in sorted(os.listdir(profiles)):
        tool = profile.split(".")[1]
        for symbol in functions_run(os.path.join(profiles, profile), tool):
            if symbol in seen:
                continue
            seen.add(symbol)
            if any(defined[other][symbol] > 1 for other in tools):
                left_out["defined more than once"] += 1
            elif any(sections[other].get(symbol, ("", 0))[1] > SECTION_LIMIT for other in tools):
                left_out["in a code section over 64 KiB"] += 1
            elif defined[tool][symbol] == 0:
                left_out["no symbol of that name"] += 1
            elif sections[tool].get(symbol, (symbol, 0)) in placed:
                left_out["in the section of one listed before"] += 1
            else:
                placed.add(sections[tool].get(symbol, (symbol, 0)))
                order.append(symbol)
    for reason, count in sorted(left_out.items()):
        print(f"startup-order: left out {count}: {reason}", file=sys.stderr)
    print("\n".join(order))


if __name__ == "__main__":
    main()
