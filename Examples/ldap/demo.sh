#!/bin/bash
# Starts a throwaway OpenLDAP directory on a loopback port (its own slapd.conf, LDIF and TLS certificate in
# a temporary directory; nothing of the system's configuration is touched) and runs the REPL against it.
# The directory is stopped however the REPL ends. Accounts: alice / wonderland and carol / carol-2026
# (group staff), bob / builder.
#
# usage: Examples/ldap/demo.sh PATH-TO-gatekeeper-repl      (make ldap-demo runs it)
#        Examples/ldap/demo.sh --start DIR                 start the directory in DIR and leave it running
#                                                          (DIR/port for ldap:// with StartTLS, DIR/ldaps-port
#                                                          for ldaps://, DIR/cert.pem; stop it: kill $(cat DIR/slapd.pid))
set -euo pipefail
if [ "${1:-}" = "--start" ]; then
    work=${2:?usage: demo.sh --start DIR}
    repl=""
else
    repl=${1:?usage: demo.sh PATH-TO-gatekeeper-repl}
    # The REPL reads its configuration only from directories no one else may write: not /tmp.
    . "$(dirname "$0")/../../Packaging/private-tmp.sh"
    work=$(private_tmp gatekeeper-ldap-demo)
    cleanup() {
        [ -f "$work/slapd.pid" ] && kill "$(cat "$work/slapd.pid")" 2>/dev/null || true
        rm -rf "$work"
    }
    trap cleanup EXIT
fi
mkdir -p "$work/db"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>/dev/null
cat > "$work/slapd.conf" <<CONF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/nis.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload back_monitor
pidfile $work/slapd.pid
TLSCertificateFile $work/cert.pem
TLSCertificateKeyFile $work/key.pem
database mdb
suffix "dc=example,dc=test"
rootdn "cn=admin,dc=example,dc=test"
rootpw admin-secret
directory $work/db
access to attrs=userPassword by anonymous auth by * none
access to * by * read
# cn=Monitor: the operations served and connections open, for make bench's load per login.
database monitor
access to * by * read
CONF
{
    printf 'dn: dc=example,dc=test\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n\n'
    printf 'dn: ou=people,dc=example,dc=test\nobjectClass: organizationalUnit\nou: people\n\n'
    n=2001
    for account in alice:wonderland bob:builder carol:carol-2026; do
        user=${account%%:*}
        printf 'dn: uid=%s,ou=people,dc=example,dc=test\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\n' "$user"
        printf 'uid: %s\ncn: %s Example\nsn: Example\nuidNumber: %s\ngidNumber: 2000\nhomeDirectory: /home/%s\n' \
            "$user" "${user^}" "$n" "$user"
        printf 'userPassword: %s\n\n' "${account#*:}"
        n=$((n + 1))
    done
    printf 'dn: cn=staff,dc=example,dc=test\nobjectClass: posixGroup\ncn: staff\ngidNumber: 2000\n'
    printf 'memberUid: alice\nmemberUid: carol\n'
} > "$work/data.ldif"
slapadd -f "$work/slapd.conf" -l "$work/data.ldif" 2>/dev/null
# Two loopback ports picked at random; another server may hold one (tests and benchmarks start theirs side
# by side), so slapd is tried on up to ten pairs.
for attempt in $(seq 10); do
    port=$((20000 + RANDOM % 30000))
    ldaps_port=$((port + 1))
    slapd -f "$work/slapd.conf" -h "ldap://127.0.0.1:$port/ ldaps://127.0.0.1:$ldaps_port/" && break
    if [ "$attempt" -eq 10 ]; then echo "demo.sh: slapd could not start on any of ten port pairs" >&2; exit 1; fi
done
for _ in $(seq 100); do ldapwhoami -x -H "ldap://127.0.0.1:$port" >/dev/null 2>&1 && break; sleep 0.05; done
if [ -z "$repl" ]; then
    echo "$port" > "$work/port"
    echo "$ldaps_port" > "$work/ldaps-port"
    exit 0
fi
cat > "$work/ldap.conf" <<CONF
required ldap uri=ldap://127.0.0.1:$port base=dc=example,dc=test ca=$work/cert.pem
CONF
chmod 600 "$work/ldap.conf"
echo "A throwaway directory at ldap://127.0.0.1:$port (StartTLS required): alice / wonderland, carol / carol-2026 (staff), bob / builder."
"$repl" --config "$work/ldap.conf" --state-dir "$work"
