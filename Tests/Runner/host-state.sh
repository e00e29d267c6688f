#!/usr/bin/env bash
# host-state.sh: a fingerprint of what on this host belongs to swift-gatekeeper or to its PAM set-up, for
# `make test` to show that a run changed none of it: root's /var/lib/gatekeeper, /etc/gatekeeper and
# /run/gatekeeper (each file's path, type, mode, owner and a digest of its bytes), the package's state as
# dpkg knows it, the PAM files under /etc/pam.d, /usr/lib/pam.d, /usr/share/pam-configs and /var/lib/pam, and
# the names and digests of the accounts and groups. Never a file's contents: /etc/shadow holds hashes.
set -uo pipefail
export LC_ALL=C

fingerprint() {
    local path
    for path in "$@"; do
        [[ -e $path ]] || { echo "$path: absent"; continue; }
        find "$path" -xdev \( -type f -o -type d -o -type l -o -type s \) -printf '%p %y %m %u:%g\n' 2>/dev/null |
            sort | while read -r file type rest; do
                if [[ $type == f ]]; then
                    echo "$file $type $rest $(sha256sum <"$file" | cut -c1-16)"
                else
                    echo "$file $type $rest"
                fi
            done
    done
}

fingerprint /var/lib/gatekeeper /etc/gatekeeper /run/gatekeeper /etc/pam.d /usr/lib/pam.d \
    /usr/share/pam-configs /var/lib/pam
for file in /etc/passwd /etc/group /etc/shadow /etc/gshadow /etc/sudoers; do
    [[ -r $file ]] && echo "$file $(sha256sum <"$file" | cut -c1-16)"
done
echo "swift-gatekeeper package: $(dpkg-query -W -f '${Version} ${Status}' swift-gatekeeper 2>/dev/null || echo absent)"
for directory in /usr/lib /usr/local/lib /lib; do
    find "$directory" -xdev -name 'pam_gatekeeper.so' -printf '%p %s\n' 2>/dev/null
done | sort
