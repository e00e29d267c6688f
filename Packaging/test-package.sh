#!/usr/bin/env bash
# Checks the Debian package and the installation (make test-package, run by make test):
#   Packaging/test-package.sh PACKAGE.deb
# 1. lintian reports no error or warning;
# 2. make install's script into a staging directory installs what it lists, and uninstall removes all of
#    it but an edited configuration;
# 3. as root, the package is installed for real (make test: in a private copy of the host), its tools run with nothing from the toolchain and no
#    libstdc++.so (ldd) and log in through a PAM module written in C++,
#    a mock login and an isolated PAM login work from the installed files, the manual pages and the
#    completion are where man and bash look; removing it leaves only the conffile, purging leaves nothing.
#    Not root: the package is unpacked into a directory and its tools run from there (install skipped).
set -euo pipefail

deb=$(realpath "${1:?usage: test-package.sh PACKAGE.deb}")
here=$(cd "$(dirname "$0")" && pwd)
package=swift-gatekeeper
# The configurations written here must pass the tools' directory rule: not /tmp.
. "$here/private-tmp.sh"
scratch=$(private_tmp gatekeeper-test-package)
installed_by_test=0
account=""
cleanup() {
    if ((installed_by_test)); then dpkg --purge "$package" >/dev/null 2>&1 || true; fi
    if [[ -n $account ]]; then userdel "$account" 2>/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT

checks=0
fail() {
    echo "test-package: FAILED: $*" >&2
    exit 1
}
pass() {
    checks=$((checks + 1))
    echo "test-package: ok: $*"
}

# Runs "$@" (a function exported with export -f, or a command) in a mount namespace of its own where
# /etc/pam.d, pam-auth-update's state (/var/lib/pam) and, unless PROFILES=host, its profiles
# (/usr/share/pam-configs) are copies, and /run/gatekeeper, /usr/local and /etc/gatekeeper (unless the
# package's) are empty: pam-auth-update, make install and the daemon's socket there change nothing of the
# host's. (dpkg's own files are the host's: a package removed there is removed.)
in_private_host() {
    local made=()
    for directory in /run/gatekeeper /etc/gatekeeper /usr/local; do
        [[ -d $directory ]] || { mkdir -p "$directory" && made+=("$directory"); }
    done
    local status=0
    SCRATCH=$scratch PROFILES=${PROFILES:-copy} unshare -m --propagation private bash -c '
        set -euo pipefail
        for directory in /etc/pam.d /var/lib/pam /usr/share/pam-configs; do
            [[ $directory == /usr/share/pam-configs && $PROFILES == host ]] && continue
            copy=$(mktemp -d "$SCRATCH/copy.XXXXXX")
            [[ -d $directory ]] && cp -a "$directory/." "$copy/"
            mkdir -p "$directory"
            mount --bind "$copy" "$directory"
        done
        for directory in /run/gatekeeper /usr/local; do mount -t tmpfs -o mode=0755 tmpfs "$directory"; done
        [[ -e /etc/gatekeeper/gatekeeper.conf ]] || mount -t tmpfs -o mode=0755 tmpfs /etc/gatekeeper
        "$@"' in-private-host "$@" || status=$?
    for directory in "${made[@]}"; do rmdir "$directory" 2>/dev/null || true; done
    return $status
}

# login_through_profile ACCOUNT PASSWORD_FILE WORK DAEMON...: with the gatekeeper profile turned on by
# pam-auth-update, the login service (Debian's /etc/pam.d/login, through common-auth) signs ACCOUNT in
# through gatekeeperd (DAEMON: its command and options; it is given the socket and WORK/state) with the
# stack's password, and refuses a wrong one.
login_through_profile() {
    local account=$1 password=$2 work=$3
    shift 3
    pam-auth-update --enable gatekeeper >/dev/null
    grep -q "pam_gatekeeper.so" /etc/pam.d/common-auth || { echo "the profile did not reach common-auth"; return 1; }
    "$@" --foreground --socket /run/gatekeeper/socket --state-dir "$work/state" 2>"$work/daemon.log" &
    local daemon=$!
    for _ in $(seq 100); do [[ -S /run/gatekeeper/socket ]] && break; sleep 0.1; done
    local status=0 out
    out=$(pamtester login "$account" authenticate <"$password" 2>&1) || status=$?
    if ((status == 0)); then
        echo wrong | pamtester login "$account" authenticate >/dev/null 2>&1 && status=98
    fi
    kill "$daemon"
    wait "$daemon" || true
    ((status == 0)) || {
        echo "a login through the profile (status $status): $out; gatekeeperd: $(cat "$work/daemon.log")"
        return 1
    }
}

# make install with PREFIX=/usr/local, for real (in in_private_host): the unit starts the installed daemon on
# the installed service files, the profile names the installed module, a login through it works, and make
# uninstall turns the profile off before the module goes.
install_end_to_end() {
    local here=$1 account=$2 password=$3 work=$4 multiarch unit daemon
    multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
    PREFIX=/usr/local bash "$here/install.sh" install >/dev/null
    unit=/usr/local/lib/systemd/system/gatekeeperd.service
    daemon=$(sed -n 's/^ExecStart=//p' "$unit")
    [[ $daemon == /usr/local/sbin/gatekeeperd && -x $daemon ]] || { echo "the unit starts: $daemon"; return 1; }
    grep -q "$(printf '\t')/usr/local/lib/$multiarch/security/pam_gatekeeper.so" /usr/share/pam-configs/gatekeeper ||
        { echo "the profile does not name the installed module: $(cat /usr/share/pam-configs/gatekeeper)"; return 1; }
    [[ -f /usr/local/lib/$multiarch/security/pam_gatekeeper.so && -d /etc/gatekeeper/pam.d ]] ||
        { echo "the module or /etc/gatekeeper/pam.d is missing"; return 1; }
    /usr/local/bin/gatekeeper-passwd add /etc/gatekeeper/users "$account" --create --password-stdin <"$password" \
        >/dev/null
    printf 'delay 0\nrequired file users=/etc/gatekeeper/users\n' >/etc/gatekeeper/pam.d/default
    chmod 0644 /etc/gatekeeper/pam.d/default
    # The daemon as the unit starts it: its own default service directory is where make install put them.
    login_through_profile "$account" "$password" "$work" $daemon
    local said
    # The per-service recipe's line in sudo: make uninstall refuses to leave it naming a module that is gone.
    cp /etc/pam.d/sudo "$work/sudo"
    sed -i "/^@include common-auth/i auth [success=done ignore=ignore user_unknown=ignore authinfo_unavail=ignore default=die] /usr/local/lib/$multiarch/security/pam_gatekeeper.so" /etc/pam.d/sudo
    if said=$(PREFIX=/usr/local bash "$here/install.sh" uninstall 2>&1); then
        echo "make uninstall went on with /etc/pam.d/sudo naming the module: $said"
        return 1
    fi
    grep -q "/etc/pam.d/sudo" <<<"$said" || { echo "make uninstall did not name /etc/pam.d/sudo: $said"; return 1; }
    [[ -f /usr/local/lib/$multiarch/security/pam_gatekeeper.so ]] || { echo "the refused uninstall removed the module"; return 1; }
    cp "$work/sudo" /etc/pam.d/sudo
    # A file libpam reads through an include, in a subdirectory and hidden: refused too, and nothing changed
    # (the profile still on).
    mkdir -p /etc/pam.d/local
    echo "auth required /usr/local/lib/$multiarch/security/pam_gatekeeper.so" >/etc/pam.d/local/.gatekeeper
    if said=$(PREFIX=/usr/local bash "$here/install.sh" uninstall 2>&1); then
        echo "make uninstall went on with /etc/pam.d/local/.gatekeeper naming the module: $said"
        return 1
    fi
    grep -q "pam_gatekeeper" /etc/pam.d/common-auth || { echo "the refused uninstall turned the profile off"; return 1; }
    rm -r /etc/pam.d/local
    # DESTDIR=/ is the host itself, without the host's checks: refused.
    if said=$(DESTDIR=/ PREFIX=/usr/local bash "$here/install.sh" uninstall 2>&1); then
        echo "make uninstall took DESTDIR=/: $said"
        return 1
    fi
    said=$(PREFIX=/usr/local bash "$here/install.sh" uninstall)
    grep -q "turned the gatekeeper profile off" <<<"$said" || { echo "make uninstall: $said"; return 1; }
    ! grep -qs pam_gatekeeper /etc/pam.d/common-* || { echo "make uninstall left the module in common-*"; return 1; }
    [[ ! -e /usr/local/lib/$multiarch/security/pam_gatekeeper.so && ! -e /usr/share/pam-configs/gatekeeper ]] ||
        { echo "make uninstall left the module or the profile"; return 1; }
}
# The installed package, for real (in in_private_host): a login through its profile, and its removal turning
# the profile off (prerm) before the module goes.
package_end_to_end() {
    local account=$1 password=$2 work=$3 config=$4
    login_through_profile "$account" "$password" "$work" gatekeeperd --config-dir "$config"
    # The per-service recipe's line in sudo: the removal is refused, and the package stays.
    cp /etc/pam.d/sudo "$work/sudo"
    sed -i '/^@include common-auth/i auth [success=done ignore=ignore user_unknown=ignore authinfo_unavail=ignore default=die] pam_gatekeeper.so' /etc/pam.d/sudo
    local said
    if said=$(dpkg --remove swift-gatekeeper 2>&1); then
        echo "dpkg --remove went on with /etc/pam.d/sudo naming the module: $said"
        return 1
    fi
    grep -q "/etc/pam.d/sudo" <<<"$said" || { echo "the refused removal did not name /etc/pam.d/sudo: $said"; return 1; }
    dpkg-query -W -f='${Status}' swift-gatekeeper | grep -q "ok installed" || { echo "the refused removal left: $(dpkg-query -W -f='${Status}' swift-gatekeeper)"; return 1; }
    cp "$work/sudo" /etc/pam.d/sudo
    dpkg --remove swift-gatekeeper >/dev/null
    ! grep -qs pam_gatekeeper /etc/pam.d/common-* || { echo "dpkg --remove left the module in common-*"; return 1; }
}
export -f login_through_profile install_end_to_end package_end_to_end

# 1. lintian.
lintian_output=$(lintian --allow-root --fail-on error,warning "$deb" 2>&1) || fail "lintian: $lintian_output"
pass "lintian reports no error or warning"

# 2. make install / make uninstall, staged.
stage=$scratch/stage
PREFIX=/usr/local DESTDIR=$stage bash "$here/install.sh" install >/dev/null
expected=$(PREFIX=/usr/local bash "$here/install.sh" list | sort)
actual=$(cd "$stage" && find . \( -type f -o -type l \) -printf '/%P\n' | sort)
[[ $expected == "$actual" ]] || fail "make install placed other files than it lists:"$'\n'"$(diff <(echo "$expected") <(echo "$actual"))"
[[ -d $stage/usr/local/lib/gatekeeper/plugins ]] || fail "make install made no plugin directory"
[[ $(readlink "$stage/usr/local/share/bash-completion/completions/gatekeeper-passwd") == gatekeeper-run ]] ||
    fail "the completion link of gatekeeper-passwd"
pass "make install places exactly what it lists, under PREFIX=/usr/local"
for prefix in "/opt/my prefix" "/opt/a&b" "/opt/a|b" "opt/relative"; do
    if PREFIX=$prefix DESTDIR=$scratch/odd bash "$here/install.sh" install >/dev/null 2>&1; then
        fail "make install took PREFIX=$prefix"
    fi
    [[ ! -e $scratch/odd ]] || fail "make install with PREFIX=$prefix wrote $(find "$scratch/odd" | head -3)"
done
pass "make install refuses a PREFIX that the unit or the PAM profile could not name (blanks, & | , relative), writing nothing"
echo "# edited" >>"$stage/etc/gatekeeper/gatekeeper.conf"
PREFIX=/usr/local DESTDIR=$stage bash "$here/install.sh" install >/dev/null
grep -q "^# edited" "$stage/etc/gatekeeper/gatekeeper.conf" || fail "make install overwrote an edited configuration"
PREFIX=/usr/local DESTDIR=$stage bash "$here/install.sh" uninstall >/dev/null
left=$(cd "$stage" && find . \( -type f -o -type l \) -printf '/%P\n')
[[ $left == /etc/gatekeeper/gatekeeper.conf ]] || fail "make uninstall left: $left"
[[ ! -e $stage/usr/local/lib/gatekeeper && ! -e $stage/usr/local/libexec/gatekeeper ]] ||
    fail "make uninstall left the gatekeeper directories"
rm "$stage/etc/gatekeeper/gatekeeper.conf"
PREFIX=/usr/local DESTDIR=$stage bash "$here/install.sh" install >/dev/null
PREFIX=/usr/local DESTDIR=$stage bash "$here/install.sh" uninstall >/dev/null
left=$(cd "$stage" && find . \( -type f -o -type l \) -printf '/%P\n')
[[ -z $left ]] || fail "make uninstall left: $left"
pass "make install keeps an edited configuration, make uninstall removes everything else (and the unchanged example)"

# What the package holds.
contents=$(dpkg-deb --contents "$deb")
for path in ./usr/bin/gatekeeper-run ./usr/bin/gatekeeper-passwd ./usr/bin/gatekeeper-repl \
    ./usr/libexec/gatekeeper/gatekeeper-pam-helper ./usr/lib/gatekeeper/plugins/ \
    ./usr/share/man/man1/gatekeeper-run.1.gz ./usr/share/man/man5/gatekeeper.conf.5.gz \
    ./usr/share/bash-completion/completions/gatekeeper-run ./etc/gatekeeper/gatekeeper.conf \
    ./usr/share/doc/swift-gatekeeper/copyright ./usr/sbin/gatekeeperd ./lib/systemd/system/gatekeeperd.service \
    ./lib/systemd/system/gatekeeperd.socket ./usr/share/pam-configs/gatekeeper ./usr/share/man/man8/gatekeeperd.8.gz \
    ./usr/share/man/man8/pam_gatekeeper.8.gz ./usr/share/gatekeeper/pam.d/sudo.example ./etc/gatekeeper/pam.d/ \
    "./lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/security/pam_gatekeeper.so"; do
    grep -q " $path\( \|$\)" <<<"$contents" || fail "the package lacks $path"
done
[[ $(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles) == /etc/gatekeeper/gatekeeper.conf ]] ||
    fail "the configuration is not a conffile"
depends=$(dpkg-deb --field "$deb" Depends)
for library in libc6 libpam0g libcrypt1 libaprutil1 libldap liboath0 libqrencode4 libunistring2 libcurl4 libssl3 libpwquality1; do
    grep -q "$library" <<<"$depends" || fail "Depends lacks $library: $depends"
done
grep -qi "swift" <<<"$depends" && fail "Depends names a Swift package: $depends"
# The packed relocations the tools may be linked with need glibc 2.36's loader; Depends must say so.
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/bin/gatekeeper-run >"$scratch/gatekeeper-run.packed"
if readelf -V "$scratch/gatekeeper-run.packed" | grep -q GLIBC_ABI_DT_RELR; then
    grep -q "libc6 (>= 2.36)" <<<"$depends" || fail "the tools need glibc 2.36's DT_RELR, Depends says: $depends"
fi
pass "the package holds the tools, pages, completion and conffile, and depends on: $depends"

toolchain=$(dirname "$(dirname "$(realpath "$(command -v swift)")")")
# Runs the tools of an installation rooted at $1 (/ or an unpacked copy) with a clean environment.
check_tools() {
    local root=$1 tool output status
    for tool in "$root/usr/bin/gatekeeper-run" "$root/usr/bin/gatekeeper-passwd" "$root/usr/bin/gatekeeper-repl" \
        "$root/usr/libexec/gatekeeper/gatekeeper-pam-helper" "$root/usr/sbin/gatekeeperd"; do
        output=$(ldd "$tool")
        grep -q "not found" <<<"$output" && fail "$tool misses a library: $output"
        grep -q "$toolchain" <<<"$output" && fail "$tool loads from the toolchain ($toolchain): $output"
        grep -qi "libswift\|libFoundation\|libdispatch" <<<"$output" && fail "$tool links a Swift library: $output"
        grep -q "libstdc++" <<<"$output" && fail "$tool loads libstdc++.so, which the release build links in: $output"
        grep -q "libldap\|libgnutls\|libcurl\|libcrypto\|libssl\|libpam\|libcrypt\.\|libapr\|liboath\|libqrencode\|libunistring" <<<"$output" &&
            fail "$tool links a backend's library, which is loaded when first called: $output"
    done
    pass "the tools load nothing from the toolchain ($toolchain), no Swift library, no libstdc++.so, no backend's library (ldd)"

    output=$(env -i PATH=/usr/bin:/bin "$root/usr/bin/gatekeeper-run" --help) || fail "gatekeeper-run --help failed"
    [[ $output == "usage: gatekeeper-run"* ]] || fail "gatekeeper-run --help: $output"
    local state=$scratch/state-$RANDOM
    install -d -m 0700 "$state"
    output=$(echo wonderland | env -i PATH=/usr/bin:/bin "$root/usr/bin/gatekeeper-run" --provider mock --delay 0 \
        --user alice --password-stdin --state-dir "$state" -- sh -c 'echo "signed in: $GATEKEEPER_USER"')
    [[ $output == "signed in: alice" ]] || fail "a mock login ran: $output"
    status=0
    echo wrong | env -i PATH=/usr/bin:/bin "$root/usr/bin/gatekeeper-run" --provider mock --delay 0 --user bob \
        --password-stdin --state-dir "$state" -- sh -c 'echo ran' >"$scratch/out" 2>&1 || status=$?
    [[ $status == 77 ]] || fail "a wrong password: exit $status: $(cat "$scratch/out")"
    grep -q "^ran" "$scratch/out" && fail "a wrong password ran the command"
    pass "a mock login runs the command, a wrong password does not (77)"

    # The tools carry their own libstdc++, never exported: a PAM module written in C++ loads
    # libstdc++.so into the same process, and must run there, its exceptions caught where they are thrown.
    local modules=$scratch/cxx-$RANDOM
    install -d -m 0755 "$modules"
    cat >"$modules/pam_cxx.cpp" <<'CXX'
#include <security/pam_modules.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>
extern "C" int pam_sm_authenticate(pam_handle_t *, int, int, const char **) {
    try {
        std::vector<std::string> words;
        std::istringstream in("alpha beta gamma");
        for (std::string word; in >> word;) words.push_back(word);
        if (words.size() != 3) return PAM_AUTH_ERR;
        throw std::runtime_error("caught in the module");
    } catch (const std::exception &error) {
        return std::string(error.what()) == "caught in the module" ? PAM_SUCCESS : PAM_AUTH_ERR;
    }
}
extern "C" int pam_sm_setcred(pam_handle_t *, int, int, const char **) { return PAM_SUCCESS; }
extern "C" int pam_sm_acct_mgmt(pam_handle_t *, int, int, const char **) { return PAM_SUCCESS; }
CXX
    g++ -shared -fPIC -O2 -o "$modules/pam_cxx.so" "$modules/pam_cxx.cpp" || fail "g++ could not build a C++ PAM module"
    ldd "$modules/pam_cxx.so" | grep -q "libstdc++" || fail "the C++ PAM module does not load libstdc++.so"
    printf 'auth required %s/pam_cxx.so\naccount required %s/pam_cxx.so\n' "$modules" "$modules" >"$modules/cxx"
    chmod 0644 "$modules/cxx"
    output=$(echo anything | env -i PATH=/usr/bin:/bin "$root/usr/bin/gatekeeper-run" --provider pam --service cxx \
        --pam-dir "$modules" --user "$(id -un)" --password-stdin --state-dir "$state" -- sh -c 'echo admitted' 2>&1) ||
        fail "a login through a C++ PAM module: $output"
    [[ $output == "admitted" ]] || fail "a login through a C++ PAM module: $output"
    pass "a PAM module written in C++ runs in the tool's process, beside the tool's own libstdc++"
}

if [[ $(id -u) != 0 ]]; then
    dpkg-deb -x "$deb" "$scratch/root"
    check_tools "$scratch/root"
    echo "test-package: skipped: installing and removing the package needs root (the unpacked tools were checked)"
    echo "test-package: $checks checks passed"
    exit 0
fi

# 3. Installed for real: in a private copy of the host when make test runs it (Tests/Runner/private-host.sh),
# where a package the host has is purged first, in the copy only.
if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed"; then
    [[ ${GATEKEEPER_PRIVATE_HOST-} == 1 ]] ||
        fail "$package is already installed on this machine; remove it first (dpkg --purge $package)"
    dpkg --purge "$package" >/dev/null || fail "dpkg --purge of the host's $package (in the private copy)"
fi
# A host account, as login, sudo, su and sshd need (a name the host does not know is counted nowhere and
# admitted never: sshd's invalid users), removed at the end.
account=gkpkg$$
useradd -M -s /usr/sbin/nologin "$account" || fail "useradd $account"
echo "Daemon-Pass-$RANDOM" >"$scratch/password"

# make install PREFIX=/usr/local, for real, in a mount namespace that keeps the host's files as they are.
work=$(mktemp -d "$scratch/install.XXXXXX")
output=$(in_private_host install_end_to_end "$here" "$account" "$scratch/password" "$work" 2>&1) ||
    fail "make install PREFIX=/usr/local end to end: $output"
pass "make install PREFIX=/usr/local: the unit starts the installed daemon on /etc/gatekeeper/pam.d, pam-auth-update's profile names the installed module, login signs in through it (and refuses a wrong password); make uninstall refuses (changing nothing) while /etc/pam.d/sudo or an included hidden file names the module, refuses DESTDIR=/, then turns the profile off first"

installed_by_test=1
dpkg --install "$deb" >/dev/null || fail "dpkg --install"
listed=$(dpkg -L "$package")
check_tools /

# The isolated PAM provider finds its helper in /usr/libexec/gatekeeper by default: a service that denies
# everyone is asked through it (77); without the helper the provider would be unavailable (69).
pamdir=$scratch/pam.d
install -d -m 0755 "$pamdir"
printf 'auth required pam_deny.so\naccount required pam_deny.so\n' >"$pamdir/deny"
printf 'delay 0\nrequired pam service=deny pam-dir=%s isolated=yes\n' "$pamdir" >"$scratch/deny.conf"
chmod 0644 "$scratch/deny.conf"
status=0
echo secret | env -i PATH=/usr/bin:/bin gatekeeper-run --config "$scratch/deny.conf" --user nobody --password-stdin \
    --state-dir "$scratch/state-pam" -- true >"$scratch/out" 2>&1 || status=$?
[[ $status == 77 ]] || fail "an isolated PAM login through the installed helper: exit $status: $(cat "$scratch/out")"
pass "an isolated PAM login runs the installed /usr/libexec/gatekeeper/gatekeeper-pam-helper"

if [[ ! -e /usr/share/man/man1/gatekeeper-run.1.gz ]] &&
    grep -Eqs '^path-exclude[= ]+/usr/share/man' /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d/*; then
    echo "test-package: skipped: this machine's dpkg leaves out manual pages (path-exclude /usr/share/man)"
else
    [[ $(man -w gatekeeper-run) == /usr/share/man/man1/gatekeeper-run.1.gz ]] || fail "man -w gatekeeper-run"
    [[ $(man -w 5 gatekeeper.conf) == /usr/share/man/man5/gatekeeper.conf.5.gz ]] || fail "man -w 5 gatekeeper.conf"
    page=$(MANWIDTH=80 man gatekeeper-passwd 2>/dev/null) || fail "man gatekeeper-passwd failed"
    [[ $page == *"SYNOPSIS"*"gatekeeper-passwd add|set|change|expire|delete"* ]] || fail "man gatekeeper-passwd: $page"
    pass "man finds and renders the installed pages"
fi
completions=$(bash -c 'source /usr/share/bash-completion/bash_completion 2>/dev/null || true
    _completion_loader gatekeeper-passwd 2>/dev/null || source /usr/share/bash-completion/completions/gatekeeper-passwd
    COMP_WORDS=(gatekeeper-run --provider ""); COMP_CWORD=2; _gatekeeper_run; echo "${COMPREPLY[*]}"')
[[ $completions == *"mock"*"ldap"* ]] || fail "bash completion from the installed script: $completions"
pass "bash loads the installed completion by the command's name"
gatekeeper-run --check-config /etc/gatekeeper/gatekeeper.conf >/dev/null || fail "the example configuration is invalid"
pass "the installed example configuration is valid"

# The installed daemon serves a users-file stack to the installed module, found by libpam by its bare name;
# the pam-auth-update profile is off until turned on, and the units are enabled by nobody.
module=$(ldd "/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/security/pam_gatekeeper.so")
grep -qi "libswift\|libstdc++\|libFoundation" <<<"$module" && fail "pam_gatekeeper.so loads a Swift or C++ library: $module"
grep -q "^Default: no" /usr/share/pam-configs/gatekeeper || fail "the pam-auth-update profile is on by default"
daemon=$scratch/daemon
install -d -m 0755 "$daemon" "$daemon/pam.d"
cp "$scratch/password" "$daemon/password"
gatekeeper-passwd add "$daemon/users" "$account" --create --password-stdin <"$daemon/password" >/dev/null ||
    fail "gatekeeper-passwd add for the daemon's stack"
printf 'delay 0\nrequired file users=%s/users\n' "$daemon" >"$daemon/pam.d/default"
chmod 0644 "$daemon/pam.d/default"
gatekeeperd --check --config-dir "$daemon/pam.d" --state-dir "$daemon/state" >/dev/null || fail "gatekeeperd --check"
gatekeeperd --foreground --socket "$daemon/socket" --config-dir "$daemon/pam.d" --state-dir "$daemon/state" \
    2>"$daemon/log" &
daemon_pid=$!
for _ in $(seq 100); do [[ -S $daemon/socket ]] && break; sleep 0.1; done
service=gatekeeper-test-package-$$
printf 'auth required pam_gatekeeper.so socket=%s/socket\naccount required pam_gatekeeper.so socket=%s/socket\n' \
    "$daemon" "$daemon" >"/etc/pam.d/$service"
status=0
pamtester "$service" "$account" authenticate acct_mgmt <"$daemon/password" >"$scratch/out" 2>&1 || status=$?
echo wrong | pamtester "$service" "$account" authenticate >>"$scratch/out" 2>&1 && status=99
rm -f "/etc/pam.d/$service"
kill "$daemon_pid"
wait "$daemon_pid" || fail "gatekeeperd did not stop cleanly on SIGTERM: $(cat "$daemon/log")"
[[ $status == 0 ]] || fail "pamtester through the installed module and daemon: $(cat "$scratch/out")"
pass "the installed gatekeeperd serves the installed pam_gatekeeper.so (pamtester), and stops on SIGTERM"

# Removing, with the profile on: it is turned off first; nothing but the conffile stays; purging: nothing at all.
echo "# edited by the administrator" >>/etc/gatekeeper/gatekeeper.conf
work=$(mktemp -d "$scratch/package.XXXXXX")
output=$(PROFILES=host in_private_host package_end_to_end "$account" "$scratch/password" "$work" "$daemon/pam.d" 2>&1) ||
    fail "the package's profile end to end: $output"
pass "the package's pam-auth-update profile, turned on: login signs in through it and refuses a wrong password; dpkg --remove is refused while /etc/pam.d/sudo names the module, then turns the profile off first"
while read -r path; do
    [[ $path == /etc/gatekeeper/gatekeeper.conf || $path == /etc/gatekeeper ]] && continue
    # A system directory that is a link (/lib under merged /usr) is the system's, not the package's.
    [[ -L $path && -d $path ]] && continue
    if [[ -d $path && ! -L $path ]]; then
        case $path in
        /usr/lib/gatekeeper* | /usr/libexec/gatekeeper | /usr/share/doc/$package)
            fail "dpkg --remove left the directory $path" ;;
        esac
    elif [[ -e $path || -L $path ]]; then
        fail "dpkg --remove left $path"
    fi
done <<<"$listed"
grep -q "edited by the administrator" /etc/gatekeeper/gatekeeper.conf || fail "dpkg --remove lost the edited conffile"
[[ $(dpkg-query -W -f='${Status}' "$package") == "deinstall ok config-files" ]] || fail "the package state after removal"
pass "dpkg --remove leaves only the (edited) conffile"
dpkg --purge "$package" >/dev/null || fail "dpkg --purge"
installed_by_test=0
[[ ! -e /etc/gatekeeper ]] || fail "dpkg --purge left /etc/gatekeeper"
pass "dpkg --purge leaves nothing"
echo "test-package: $checks checks passed"
