#!/usr/bin/env bash
# Builds swift-gatekeeper's Debian package from the release binaries, with dpkg-deb alone (make deb).
#   Packaging/deb.sh OUTPUT_DIRECTORY      prints the path of the .deb
# Environment: VERSION (the package's version), BUILD (the directory holding the release binaries).
#
# The files are placed by install.sh (PREFIX=/usr, SYSCONFDIR=/etc), so `make install` and the package
# install the same things; Depends comes from dpkg-shlibdeps reading the binaries.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
output=${1:?usage: deb.sh OUTPUT_DIRECTORY}
version=${VERSION:?VERSION is not set}
package=swift-gatekeeper
architecture=$(dpkg --print-architecture)

stage=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$stage" "$work"' EXIT
chmod 0755 "$stage"

PREFIX=/usr SYSCONFDIR=/etc DESTDIR=$stage bash "$here/install.sh" install >/dev/null

# Debian's places and forms: manual pages compressed, the copyright and changelog in the doc directory.
gzip -9n "$stage"/usr/share/man/man*/*
doc=$stage/usr/share/doc/$package
install -d -m 0755 "$doc"
install -m 0644 "$here/debian/copyright" "$doc/copyright"
gzip -9n <"$here/debian/changelog" >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# The Debian libraries the binaries link, as dpkg-shlibdeps finds them (it wants a debian/control).
mkdir -p "$work/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$package" "$package" >"$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O -e"$stage/usr/bin/gatekeeper-run" -e"$stage/usr/bin/gatekeeper-passwd" \
    -e"$stage/usr/bin/gatekeeper-repl" -e"$stage/usr/libexec/gatekeeper/gatekeeper-pam-helper" \
    -e"$stage/usr/sbin/gatekeeperd" -e"$(echo "$stage"/lib/*/security/pam_gatekeeper.so)" 2>"$work/shlibdeps.log" |
    sed -n 's/^shlibs:Depends=//p')
[[ -n $depends ]] || {
    cat "$work/shlibdeps.log" >&2
    echo "deb.sh: dpkg-shlibdeps found no dependencies" >&2
    exit 1
}
# Every library a backend calls is loaded the first time it is called, not linked (Sources/CLibraries/CLibraryLoader
# and the C*Loader modules beside it), so dpkg-shlibdeps cannot see them: the package that has each soname
# the tools load is added by hand.
for pattern in 'libldap[-_.a-z0-9]*\.so\.[0-9]+' 'libcurl\.so\.[0-9]+' 'libcrypto\.so\.[0-9]+' 'libpwquality\.so\.[0-9]+' \
    'libpam\.so\.[0-9]+' 'libcrypt\.so\.[0-9]+' 'libaprutil-1\.so\.[0-9]+' 'liboath\.so\.[0-9]+' 'libqrencode\.so\.[0-9]+' \
    'libunistring\.so\.[0-9]+'; do
    soname=$(grep -aoE "$pattern" "$stage/usr/bin/gatekeeper-run" | sort -u)
    [[ $(wc -l <<<"$soname") == 1 && -n $soname ]] || {
        echo "deb.sh: expected one soname like $pattern in gatekeeper-run, found: $soname" >&2
        exit 1
    }
    # Every line is read (no early exit): under pipefail, a reader that stops first kills ldconfig with SIGPIPE.
    library=$(ldconfig -p | awk -v soname="$soname" '$1 == soname && !found { print $NF; found = 1 }')
    [[ -n $library ]] || {
        echo "deb.sh: $soname is not installed here" >&2
        exit 1
    }
    # The package that installed the file: under merged /usr a package may have it under /lib, not /usr/lib.
    real=$(realpath "$library")
    owner=$({ dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null; } | awk -F: 'NR == 1 { print $1 }')
    [[ -n $owner ]] || {
        echo "deb.sh: no installed package has $real" >&2
        exit 1
    }
    upstream=$(dpkg-query -W -f='${Version}' "$owner" | sed 's/^[0-9]*://; s/-[^-]*$//')
    grep -q "\b$owner\b" <<<"$depends" || depends="$depends, $owner (>= $upstream)"
done

# Tools linked with packed relative relocations (the Makefile's STATIC_LINK_FLAGS) need glibc 2.36's loader
# (GLIBC_ABI_DT_RELR), which libc6's symbols file does not name: dpkg-shlibdeps would ask for less.
if readelf -V "$stage/usr/bin/gatekeeper-run" | grep -q GLIBC_ABI_DT_RELR; then
    depends=$(sed -E 's/libc6 \(>= [0-9.]+\)/libc6 (>= 2.36)/' <<<"$depends")
    grep -q "libc6 (>= 2.36)" <<<"$depends" || depends="libc6 (>= 2.36), $depends"
fi

install -d -m 0755 "$stage/DEBIAN"
cat >"$stage/DEBIAN/control" <<CONTROL
Package: $package
Version: $version
Architecture: $architecture
Maintainer: swift-gatekeeper maintainers <maintainers@gatekeeper.example>
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends
Suggests: libpam-modules, pamtester
Section: admin
Priority: optional
Description: logins through PAM, a users file, LDAP or OpenID Connect, for tools and PAM
 swift-gatekeeper's tools put a login in front of any command. gatekeeper-run
 runs a command only for a user who signed in (and, if asked, belongs to a
 group), through PAM, an htpasswd-compatible users file, one-time codes
 (pam_oath's file), an LDAP directory, helper programs or plugins, stacked with
 Linux-PAM's semantics in a configuration file. Failed logins are counted in
 pam_faillock's format and audited to syslog or a hash-chained JSON log.
 .
 gatekeeper-passwd manages the users file (htpasswd-compatible) and pam_oath's
 users file; gatekeeper-repl is a terminal demonstration.
 .
 gatekeeperd and pam_gatekeeper.so put the same stacks on the host's login
 path: sudo, su and sshd sign people in through them (an OpenID Connect device
 login, one-time codes, LDAP with offline logins). The daemon's socket unit and
 the pam-auth-update profile are off until an administrator turns them on.
CONTROL
echo /etc/gatekeeper/gatekeeper.conf >"$stage/DEBIAN/conffiles"
for script in postinst prerm postrm; do install -m 0755 "$here/debian/$script" "$stage/DEBIAN/$script"; done
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles" "$stage/DEBIAN/md5sums"

mkdir -p "$output"
deb=$output/${package}_${version}_${architecture}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
