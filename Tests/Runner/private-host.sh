#!/usr/bin/env bash
# private-host.sh COMMAND...: runs COMMAND so that nothing it does reaches the host's own files.
#
# As root, COMMAND runs in a mount namespace of its own in which /etc, /var, /usr, /opt, /srv, /home, /root,
# /run, /tmp and /dev/shm are overlays of the host's: it reads the host's files (its accounts, its /etc/pam.d, its
# installed packages), and every file it writes, removes or replaces -- an account useradd adds, a PAM
# service file, dpkg's database, root's /var/lib/gatekeeper -- lands in a tmpfs that goes with the
# namespace. Two commands run this way at once see the host and never each other.
#
# Afterwards it says what COMMAND left behind, and fails if anything: a new name at the top of /run, /tmp,
# /dev/shm, /var/lib or (with GATEKEEPER_WATCH_TMPDIR=1) COMMAND's TMPDIR, in /etc/pam.d, /etc/sudoers.d or
# /etc/gatekeeper, or an account or group added or changed in /etc/passwd, /etc/group, /etc/shadow or
# /etc/gshadow (a test's account not removed). What a test leaves would have been left on the host had it
# run without this script.
#
# Not root: COMMAND runs as it is (it can change nothing of the host's that root owns, and the tests that
# would are skipped).
set -euo pipefail

if [[ $(id -u) != 0 ]]; then exec "$@"; fi

if [[ ${GATEKEEPER_PRIVATE_HOST_LAYER-} == "" ]]; then
    # The mount point of the namespace's writable layer (the host sees only an empty directory).
    layer=$(mktemp -d "${TMPDIR:-/tmp}/gatekeeper-private-host.XXXXXX")
    status=0
    GATEKEEPER_PRIVATE_HOST_LAYER=$layer unshare --mount --propagation private "$0" "$@" || status=$?
    rmdir "$layer"
    exit $status
fi

layer=$GATEKEEPER_PRIVATE_HOST_LAYER
unset GATEKEEPER_PRIVATE_HOST_LAYER
# What runs here may know it (test-package.sh removes a package the host has, in this copy only).
export GATEKEEPER_PRIVATE_HOST=1
mount -t tmpfs -o mode=0700 gatekeeper-private-host "$layer"
# The layer stays reachable through this descriptor once the directory holding it is overlaid (below).
exec 9<"$layer"
upper=/proc/$$/fd/9
# The directory holding the layer's mount point is overlaid last: once it is, the layer is out of sight.
directories=()
for directory in etc var usr opt srv home root run tmp dev/shm; do
    [[ -d /$directory && ! -L /$directory ]] || continue
    if [[ $layer == /$directory/* ]]; then last=$directory; else directories+=("$directory"); fi
done
for directory in "${directories[@]}" ${last-}; do
    mkdir -p "$upper/$directory" "$upper/$directory.work"
    # The overlay's top takes the upper layer's mode and owner: the host's (/tmp stays 1777).
    chmod --reference="/$directory" "$upper/$directory"
    chown --reference="/$directory" "$upper/$directory"
    mount -t overlay gatekeeper-private-host \
        -o "lowerdir=/$directory,upperdir=$upper/$directory,workdir=$upper/$directory.work" "/$directory"
done

# What a command must leave as it found it: what it wrote is in the upper layer, whatever the host itself
# does meanwhile (the lower layer is the host's own directories, live). A name there that the host did not
# have at the start is the command's (a directory the host had is there too when the command wrote in it);
# a removed name is a whiteout (a character device 0/0), and no leftover.
watched=(run tmp dev/shm var/lib etc/pam.d etc/sudoers.d etc/gatekeeper)
# The command's own TMPDIR too, when the caller asks (run-suites.py gives each suite one of its own).
if [[ ${GATEKEEPER_WATCH_TMPDIR-} == 1 && -n ${TMPDIR-} && -d $TMPDIR && $TMPDIR == /* && $TMPDIR != *..* ]]; then
    watched+=("${TMPDIR#/}")
fi
declare -A before
for directory in "${watched[@]}"; do before[$directory]=$(ls -A "/$directory" 2>/dev/null || true); done
# Each account and group by name, with a digest of its line (never the line: /etc/shadow's hold hashes).
accounts() {
    local file line
    for file in /etc/passwd /etc/group /etc/shadow /etc/gshadow; do
        [[ -r $file ]] || continue
        while IFS= read -r line; do
            printf '%s: %s (line %s)\n' "$file" "${line%%:*}" "$(printf '%s' "$line" | sha256sum | cut -c1-12)"
        done <"$file"
    done
}
accounts_before=$(accounts | LC_ALL=C sort)

status=0
"$@" 9<&- || status=$?

left=()
for directory in "${watched[@]}"; do
    [[ -d $upper/$directory ]] || continue
    while IFS= read -r name; do
        [[ -n $name ]] || continue
        entry=$upper/$directory/$name
        [[ -c $entry && $(stat -c %t:%T "$entry") == 0:0 ]] && continue
        grep -qxF -- "$name" <<<"${before[$directory]}" && continue
        left+=("/$directory/$name")
    done < <(ls -A "$upper/$directory")
done
# The account files are the command's once it wrote them (copied up): then every account line must be back.
for file in passwd group shadow gshadow; do
    if [[ -e $upper/etc/$file ]]; then
        while IFS= read -r line; do [[ -n $line ]] && left+=("$line"); done < <(
            LC_ALL=C comm -13 <(printf '%s\n' "$accounts_before") <(accounts | LC_ALL=C sort))
        break
    fi
done
if ((${#left[@]})); then
    printf 'private-host.sh: %s left behind (it would have on the host):\n' "${1##*/}" >&2
    printf '%s\n' "${left[@]}" >&2
    [[ $status != 0 ]] || status=1
fi
exit $status
