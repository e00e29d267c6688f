#!/bin/sh
# Runs a command (sudo, su, sshd) under the host's own PAM configuration with pam_gatekeeper.so set up as an
# administrator sets it up -- in the mount namespace this script is started in (unshare -m), so that the
# host's files are never touched:
#
#   unshare -m --propagation private sh debian-host.sh SCRATCH MODULE DAEMON_DIRECTORY MODE -- COMMAND...
#
# SCRATCH    a private directory for the copies (left for the caller to remove)
# MODULE     pam_gatekeeper.so as built; it takes the place the package installs it at, beside pam_unix.so
# DAEMON_DIRECTORY  the directory holding the daemon's socket (named `socket`): it is /run/gatekeeper here
# MODE       profile: the package's pam-auth-update profile, enabled with pam-auth-update itself
#            recipe:  docs/pam-module.md's line, before `@include common-auth` in sudo, sudo-i and su
#            none:    the host's files as they are
#
# /etc/pam.d, /usr/share/pam-configs and /var/lib/pam are copies of the host's (Debian's own files, with
# whatever packages added to them); /run is a fresh one holding only the daemon's directory.
set -eu
scratch=$1 module=$2 daemon=$3 mode=$4
shift 4
[ "${1-}" = "--" ] && shift
here=$(cd "$(dirname "$0")" && pwd)
repository=$(cd "$here/../.." && pwd)

security=$(dirname "$(find /usr/lib /lib -name pam_unix.so -path '*security*' 2>/dev/null | head -n 1)")
mkdir -p "$scratch/pam.d" "$scratch/pam-configs" "$scratch/var-lib-pam" "$scratch/security" \
    "$scratch/run/gatekeeper" "$scratch/run/sshd"
cp -a /etc/pam.d/. "$scratch/pam.d/"
cp -a /usr/share/pam-configs/. "$scratch/pam-configs/"
cp -a /var/lib/pam/. "$scratch/var-lib-pam/"
cp -a "$security/." "$scratch/security/"
cp "$module" "$scratch/security/pam_gatekeeper.so"
cp "$repository/Packaging/pam-configs/gatekeeper" "$scratch/pam-configs/gatekeeper"
chmod 0755 "$scratch/run" "$scratch/run/sshd"

mount --bind "$scratch/pam.d" /etc/pam.d
mount --bind "$scratch/pam-configs" /usr/share/pam-configs
mount --bind "$scratch/var-lib-pam" /var/lib/pam
mount --bind "$scratch/security" "$security"
case "$mode" in
profile)
    DEBIAN_FRONTEND=noninteractive pam-auth-update --enable gatekeeper >"$scratch/pam-auth-update.log" 2>&1 ||
        { cat "$scratch/pam-auth-update.log" >&2; exit 1; }
    grep -q pam_gatekeeper.so /etc/pam.d/common-auth || { echo "pam-auth-update left the module out" >&2; exit 1; }
    ;;
recipe)
    # docs/pam-module.md, "Per service": the line goes before the service's own `@include common-auth`
    # (for su, that is after pam_rootok; su-l includes su).
    line='auth [success=done ignore=ignore user_unknown=ignore authinfo_unavail=ignore default=die] pam_gatekeeper.so'
    sed -i "/^@include common-auth/i $line" /etc/pam.d/sudo /etc/pam.d/sudo-i /etc/pam.d/su
    ;;
none) ;;
*)
    echo "debian-host.sh: no such mode: $mode" >&2
    exit 2
    ;;
esac

mount --bind "$daemon" "$scratch/run/gatekeeper"
mount --rbind "$scratch/run" /run

exec "$@"
