#!/usr/bin/env bash
# Writes the start-up layout of the shipped tools (make startup-order):
#   Packaging/startup-order.sh BUILD_DIRECTORY OUTPUT
# BUILD_DIRECTORY holds the tools as `make release` links them, with a link map of each beside it
# (TOOL.map). Each tool runs what a person runs most, under valgrind's callgrind: gatekeeper-run's help,
# a PAM login that runs a command, a PAM login refused, a users-file login; gatekeeper-passwd adding and
# verifying a user. The functions of the tool's own binary that ran are written to OUTPUT, one symbol a
# line, the login's first, for the linker (`--symbol-ordering-file`) to lay side by side at the start of
# the code: a run then touches, and keeps resident, a few hundred kilobytes of code instead of megabytes
# spread over the whole binary.
#
# Left out: a name defined more than once in a binary (a local copy in each module: the linker would move
# every copy, and the code around each), a function in a section over 64 KiB (the plain code section of
# a prebuilt library, which is touched anyway and would only push the rest apart), and one in the same
# section as a function listed before it.
#
# A stale list costs start-up time, never correctness: a symbol no longer there is skipped by the linker.
set -euo pipefail

build=$(realpath "${1:?usage: startup-order.sh BUILD_DIRECTORY OUTPUT}")
output=${2:?usage: startup-order.sh BUILD_DIRECTORY OUTPUT}
here=$(cd "$(dirname "$0")" && pwd)
command -v valgrind >/dev/null || { echo "startup-order: valgrind is not installed" >&2; exit 1; }
for tool in gatekeeper-run gatekeeper-passwd; do
    [ -x "$build/$tool" ] && [ -f "$build/$tool.map" ] || {
        echo "startup-order: $build/$tool or its link map $tool.map is missing (make startup-order builds them)" >&2
        exit 1
    }
done

. "$here/private-tmp.sh"
scratch=$(private_tmp gatekeeper-startup-order)
trap 'rm -rf "$scratch"' EXIT
mkdir -m 700 "$scratch/state" "$scratch/pam" "$scratch/profiles"
security=$(dirname "$(find /usr/lib /lib -name pam_permit.so -path '*/security/*' -print -quit)")
printf 'auth required %s/pam_permit.so\naccount required %s/pam_permit.so\n' "$security" "$security" \
    > "$scratch/pam/permit"
printf 'auth required %s/pam_deny.so\naccount required %s/pam_permit.so\n' "$security" "$security" \
    > "$scratch/pam/deny"
user=$(id -un)

# valgrind cannot read the toolchain's debug information: the runs use copies without it (symbols kept).
for tool in gatekeeper-run gatekeeper-passwd; do
    cp "$build/$tool" "$scratch/$tool"
    strip --strip-debug "$scratch/$tool"
done

# profile NAME STATUS INPUT TOOL ARGS...: runs TOOL under callgrind, its standard input the line INPUT, and
# fails unless it exits with STATUS (a run that went another way would profile the wrong code); the
# profile is written before the tool executes its command, and once more at its end.
profile() {
    local name=$1 expected=$2 input=$3 tool=$4 status=0
    shift 4
    printf '%s\n' "$input" | valgrind --tool=callgrind --dump-before='execv*' --dump-instr=no --demangle=no \
        --callgrind-out-file="$scratch/profiles/$name.$tool.%p" "$scratch/$tool" "$@" >/dev/null 2>&1 || status=$?
    if [ "$status" != "$expected" ] || ! compgen -G "$scratch/profiles/$name.$tool.*" >/dev/null; then
        echo "startup-order: $tool $* exited $status (expected $expected) or left no profile" >&2
        exit 1
    fi
}
run=(--state-dir "$scratch/state")
profile 1-login 0 secret gatekeeper-run --provider pam --service permit --pam-dir "$scratch/pam" --user "$user" \
    --password-stdin "${run[@]}" -- /bin/true
profile 2-refused 77 secret gatekeeper-run --provider pam --service deny --pam-dir "$scratch/pam" --user "$user" \
    --password-stdin "${run[@]}" -- /bin/true
profile 3-add 0 'correct horse battery staple' gatekeeper-passwd add "$scratch/users" alice --password-stdin --create
profile 4-file 0 'correct horse battery staple' gatekeeper-run --provider file --users "$scratch/users" \
    --user alice --password-stdin "${run[@]}" -- /bin/true
profile 5-verify 0 'correct horse battery staple' gatekeeper-passwd verify "$scratch/users" alice --password-stdin
profile 6-help 0 '' gatekeeper-run --help

# Written beside the list, under a name no one else can have placed (mktemp), then moved over it.
written=$(mktemp "$output.XXXXXX")
trap 'rm -rf "$scratch"; rm -f "$written"' EXIT
python3 "$here/startup-order.py" "$build" "$scratch/profiles" > "$written"
chmod 644 "$written"
mv "$written" "$output"
echo "startup-order: $(wc -l < "$output") functions in $output"
