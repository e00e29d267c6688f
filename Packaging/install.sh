#!/usr/bin/env bash
# Installs swift-gatekeeper's tools and their files, or removes exactly those (make install, make uninstall).
#   Packaging/install.sh install|uninstall|list
# Environment: PREFIX (default /usr/local); SYSCONFDIR (default /etc, whatever the prefix: gatekeeperd reads
# /etc/gatekeeper/pam.d, and the unit installed with another SYSCONFDIR passes it --config-dir); DESTDIR, a
# staging root put before every path (default none); BUILD, the directory holding the release binaries
# (default .build/static/release); NOSTRIP=1 installs the binaries with their symbols.
#
# Two files go where their readers look, whatever the prefix: the pam-auth-update profile in
# /usr/share/pam-configs (pam-auth-update reads no other directory), naming the module by its full path when
# it is not in libpam's own directory (PREFIX=/usr); systemd finds the units under /usr/local/lib too.
# Uninstalling (not staged) first turns the profile off with pam-auth-update, if it is on: no PAM stack is
# left naming a module that is gone.
#
# The example configuration is installed only where there is none, and removed only if unchanged: an
# administrator's configuration is never overwritten or deleted.
set -euo pipefail

action=${1:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
PREFIX=${PREFIX:-/usr/local}
SYSCONFDIR=${SYSCONFDIR:-/etc}
DESTDIR=${DESTDIR:-}
BUILD=${BUILD:-$root/.build/static/release}

fail() {
    echo "install.sh: $*" >&2
    exit 1
}
# Paths are written into the unit's ExecStart and the PAM profile, which split at blanks and take nothing
# quoted: letters, digits and . _ + - only.
for path in "$PREFIX" "$SYSCONFDIR"; do
    [[ $path =~ ^/[A-Za-z0-9._+/-]*$ && $path != *..* ]] ||
        fail "PREFIX and SYSCONFDIR must be absolute paths of letters, digits, '.', '_', '+', '-' and '/', without .. ($path)"
done
[[ -z $DESTDIR || $DESTDIR =~ ^/[A-Za-z0-9._+/-]*$ ]] ||
    fail "DESTDIR must be an absolute path of letters, digits, '.', '_', '+', '-' and '/' ($DESTDIR)"
# A staging root of / is the host itself, with none of the host's checks: leave DESTDIR empty instead.
[[ -z $DESTDIR || $(realpath -m -- "$DESTDIR") != / ]] || fail "DESTDIR=$DESTDIR is the host itself; leave it empty"

bindir=$PREFIX/bin
sbindir=$PREFIX/sbin
# PAM modules go where libpam looks (the multiarch security directory) for PREFIX=/usr; beside the prefix
# otherwise, named by full path in a service file. systemd's units likewise.
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
if [[ $PREFIX == /usr ]]; then
    pamdir=/lib/$multiarch/security
    unitdir=/lib/systemd/system
else
    pamdir=$PREFIX/lib/$multiarch/security
    unitdir=$PREFIX/lib/systemd/system
fi
pamconfigdir=/usr/share/pam-configs
exampledir=$PREFIX/share/gatekeeper/pam.d
helperdir=$PREFIX/libexec/gatekeeper
plugindir=$PREFIX/lib/gatekeeper/plugins
mandir=$PREFIX/share/man
completiondir=$PREFIX/share/bash-completion/completions
confdir=$SYSCONFDIR/gatekeeper
configuration=$confdir/gatekeeper.conf

# What is installed, one line each: mode, source, destination.
files() {
    local tool page
    for tool in gatekeeper-run gatekeeper-passwd gatekeeper-repl; do
        echo "0755 $BUILD/$tool $bindir/$tool"
    done
    echo "0755 $BUILD/gatekeeper-pam-helper $helperdir/gatekeeper-pam-helper"
    echo "0755 $BUILD/gatekeeperd $sbindir/gatekeeperd"
    echo "0644 $BUILD/pam_gatekeeper.so $pamdir/pam_gatekeeper.so"
    echo "0644 $here/systemd/gatekeeperd.service $unitdir/gatekeeperd.service"
    echo "0644 $here/systemd/gatekeeperd.socket $unitdir/gatekeeperd.socket"
    echo "0644 $here/pam-configs/gatekeeper $pamconfigdir/gatekeeper"
    echo "0644 $here/pam.d/sudo.example $exampledir/sudo.example"
    for page in gatekeeper-run.1 gatekeeper-passwd.1 gatekeeper-repl.1; do
        echo "0644 $root/man/$page $mandir/man1/$page"
    done
    echo "0644 $root/man/gatekeeper.conf.5 $mandir/man5/gatekeeper.conf.5"
    for page in gatekeeperd.8 pam_gatekeeper.8; do
        echo "0644 $root/man/$page $mandir/man8/$page"
    done
    echo "0644 $here/bash-completion/gatekeeper $completiondir/gatekeeper-run"
}
# Completion is looked up by command name: the other tools' names link to the one script.
links="gatekeeper-passwd gatekeeper-repl"
# Directories the installation creates and owns, deepest first (removed when empty).
owned_directories() {
    echo "$plugindir $PREFIX/lib/gatekeeper $helperdir $confdir/pam.d $confdir $exampledir $PREFIX/share/gatekeeper"
}

install_all() {
    local mode source destination name
    while read -r mode source destination; do
        [[ -f $source ]] || fail "$source is missing; build first (make install builds it)"
        install -d -m 0755 "$DESTDIR$(dirname "$destination")"
        install -m "$mode" "$source" "$DESTDIR$destination"
        if [[ ($mode == 0755 || $destination == *.so) && ${NOSTRIP:-} != 1 ]]; then
            strip --strip-unneeded --remove-section=.comment "$DESTDIR$destination"
        fi
        # The unit starts the daemon where it was installed, on the service files where they were installed.
        if [[ $destination == */gatekeeperd.service ]]; then
            local options=""
            [[ $confdir == /etc/gatekeeper ]] || options=" --config-dir $confdir/pam.d"
            sed -i "s|^ExecStart=/usr/sbin/gatekeeperd\$|ExecStart=$sbindir/gatekeeperd$options|" "$DESTDIR$destination"
        fi
        # The profile names the module where libpam finds it, or by its full path.
        if [[ $destination == */pam-configs/gatekeeper && $pamdir != /lib/$multiarch/security ]]; then
            sed -i "s|\tpam_gatekeeper\.so|\t$pamdir/pam_gatekeeper.so|" "$DESTDIR$destination"
        fi
        echo "installed $destination"
    done < <(files)
    for name in $links; do
        ln -sfn gatekeeper-run "$DESTDIR$completiondir/$name"
        echo "installed $completiondir/$name"
    done
    install -d -m 0755 "$DESTDIR$plugindir"
    install -d -m 0755 "$DESTDIR$confdir"
    install -d -m 0755 "$DESTDIR$confdir/pam.d"
    if [[ -e $DESTDIR$configuration || -L $DESTDIR$configuration ]]; then
        if cmp -s "$here/gatekeeper.conf" "$DESTDIR$configuration"; then
            echo "installed $configuration"
        else
            echo "kept $configuration as it is (the example is $mandir/man5/gatekeeper.conf.5's EXAMPLES)"
        fi
    else
        install -m 0644 "$here/gatekeeper.conf" "$DESTDIR$configuration"
        echo "installed $configuration"
    fi
}

# The PAM files libpam may read — /etc/pam.d with its subdirectories and dotfiles, and /usr/lib/pam.d — with
# a line (not a comment) naming the module, separated by blanks: with `managed`, every one; without it, but for
# the lines pam-auth-update manages in its common-* files (the profile's, which it takes out itself).
naming() {
    local pattern='^[[:space:]]*[^#[:space:]].*pam_gatekeeper[.]so' file
    grep -RlsE "$pattern" /etc/pam.d /usr/lib/pam.d 2>/dev/null | while read -r file; do
        if [[ ${1:-} != managed && $file =~ ^/etc/pam.d/common-(auth|account|password|session|session-noninteractive)$ ]]; then
            awk -v pattern="$pattern" '/^# here are the per-package modules/ { managed = 1 }
                /^# end of pam-auth-update config/ { managed = 0 }
                !managed && $0 ~ pattern { found = 1 } END { exit !found }' "$file" || continue
        fi
        printf '%s ' "$file"
    done || true
}

uninstall_all() {
    local mode source destination name directory
    # No PAM stack may be left naming a module about to go (a program using it would fail: "Module is
    # unknown"): lines an administrator added (the per-service recipe) stop the uninstall, naming their files;
    # a profile in use is turned off, as the package's prerm does. (Staged: nothing of the host's is touched.)
    if [[ -z $DESTDIR ]]; then
        local files
        files=$(naming)
        [[ -z $files ]] || fail "these PAM files name pam_gatekeeper.so; take its lines out first: $files"
        if [[ -f $pamconfigdir/gatekeeper ]] && grep -qs pam_gatekeeper /etc/pam.d/common-*; then
            pam-auth-update --package --remove gatekeeper
            echo "turned the gatekeeper profile off (pam-auth-update)"
        fi
        files=$(naming managed)
        [[ -z $files ]] || fail "these PAM files still name pam_gatekeeper.so; take its lines out first: $files"
    fi
    while read -r mode source destination; do
        if [[ -e $DESTDIR$destination || -L $DESTDIR$destination ]]; then
            rm -f "$DESTDIR$destination"
            echo "removed $destination"
        fi
    done < <(files)
    for name in $links; do
        if [[ -L $DESTDIR$completiondir/$name ]]; then
            rm -f "$DESTDIR$completiondir/$name"
            echo "removed $completiondir/$name"
        fi
    done
    if [[ -f $DESTDIR$configuration ]]; then
        if cmp -s "$here/gatekeeper.conf" "$DESTDIR$configuration"; then
            rm -f "$DESTDIR$configuration"
            echo "removed $configuration"
        else
            echo "kept $configuration: it was changed"
        fi
    fi
    for directory in $(owned_directories); do
        [[ -d $DESTDIR$directory ]] && rmdir --ignore-fail-on-non-empty "$DESTDIR$directory"
    done
    return 0
}

case $action in
install) install_all ;;
uninstall) uninstall_all ;;
list)
    files | cut -d' ' -f3
    for name in $links; do echo "$completiondir/$name"; done
    echo "$configuration"
    ;;
*) fail "usage: install.sh install|uninstall|list" ;;
esac
