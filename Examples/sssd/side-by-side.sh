#!/bin/bash
# SSSD beside gatekeeperd on one host, to compare them login for login: sssd (Debian's sssd-ldap) against a
# directory, in a mount namespace of its own — /var/lib/sss, /var/log/sssd and /run tmpfs, /etc an overlay —
# so the host's SSSD state and PAM files are never touched. In it, two PAM services: sss-compare (every phase
# pam_sss) and gk-compare (every phase pam_gatekeeper.so, talking to a gatekeeperd you run on SOCKET; its
# account phase `ignore` falling to pam_permit, as to the host's own account modules), both
# configured alike: TLS checked against CAFILE (StartTLS for an ldap:// URI, ldaps:// as it says), offline
# logins for 7 days, 5 failed offline logins before they are refused, 3 s time-outs. SSSD is tuned as its
# maintainers advise for a host where PAM logins matter: `pam_initgroups_scheme = always` (sssd_pam asks the
# cache for the groups, not every /proc/PID/status to see whether a session is open). The namespace ends (sssd
# stopped) when the process OWNER ends, or at `stop`. Used by the tests (SSSDComparisonTests) and by
# `make bench` (gatekeeper-bench --sssd).
#
# usage: side-by-side.sh start DIR URI BASE CAFILE MODULE SOCKET OWNER
#            DIR: an existing directory of root's; sssd.conf, the namespace's pid and sssd's log go there
#        side-by-side.sh run DIR COMMAND [ARGUMENT...]      run a command in the namespace
#        side-by-side.sh restart DIR     stop sssd and start it again on the same cache (as after a reboot
#                                        whose disk kept /var/lib/sss), once it answers PAM again
#        side-by-side.sh stop DIR
set -euo pipefail
command=${1:-}
dir=${2:?usage: side-by-side.sh start|run|stop DIR ...}

inside() { nsenter -t "$(cat "$dir/namespace.pid")" -m -- "$@"; }

case "$command" in
start)
    uri=${3:?URI} base=${4:?BASE} cafile=${5:?CAFILE} module=${6:?MODULE} socket=${7:?SOCKET} owner=${8:?OWNER}
    case "$uri" in ldaps://*) start_tls=false ;; *) start_tls=true ;; esac
    cat > "$dir/sssd.conf" <<CONF
[sssd]
services = nss, pam
domains = compare

[pam]
offline_credentials_expiration = 7
offline_failed_login_attempts = 5
offline_failed_login_delay = 5
pam_initgroups_scheme = always

[domain/compare]
id_provider = ldap
auth_provider = ldap
chpass_provider = ldap
ldap_uri = $uri
ldap_search_base = $base
ldap_schema = rfc2307
ldap_id_use_start_tls = $start_tls
ldap_tls_cacert = $cafile
ldap_tls_reqcert = demand
cache_credentials = true
ldap_network_timeout = 3
ldap_opt_timeout = 3
ldap_search_timeout = 3
CONF
    chmod 0600 "$dir/sssd.conf"
    entry="$module socket=$socket"
    # The namespace: its mounts, the two services, then sssd in the foreground, watched.
    cat > "$dir/namespace.sh" <<NAMESPACE
set -e
mount --make-rprivate /
for place in /var/lib/sss /var/log/sssd /mnt; do mount -t tmpfs -o mode=0755 tmpfs \$place; done
# /run a tmpfs of its own (sssd's pid file), with what this comparison keeps under /run left in place.
mkdir /mnt/run && mount --bind /run /mnt/run
mount -t tmpfs -o mode=0755 tmpfs /run
for path in "$dir" "$(dirname "$socket")" "$(dirname "$module")" "$(dirname "$cafile")"; do
    case "\$path" in /run/*) top=/run/\$(echo "\${path#/run/}" | cut -d/ -f1) ;; *) continue ;; esac
    [ -d "\$top" ] || { mkdir -p "\$top" && mount --bind "/mnt\$top" "\$top"; }
done
mkdir -p /var/lib/sss/db /var/lib/sss/pipes/private /var/lib/sss/mc /var/lib/sss/pubconf \
    /var/lib/sss/gpo_cache /var/lib/sss/keytabs
chmod 0700 /var/lib/sss/db /var/lib/sss/pipes/private
# The overlay's upper layer on the namespace's own tmpfs: an overlay cannot write to another (as /run is
# when the tests run in a private copy of the host).
mkdir /mnt/etc.upper /mnt/etc.work
mount -t overlay overlay -o lowerdir=/etc,upperdir=/mnt/etc.upper,workdir=/mnt/etc.work /etc
printf 'auth required pam_sss.so\naccount required pam_sss.so\npassword required pam_sss.so\n' > /etc/pam.d/sss-compare
printf 'auth required $entry\naccount [success=ok ignore=ignore default=bad] $entry\naccount required pam_permit.so\npassword required $entry\n' > /etc/pam.d/gk-compare
start_sssd() {
    rm -f /var/lib/sss/pipes/pam /var/lib/sss/pipes/nss
    /usr/sbin/sssd -i -c "$dir/sssd.conf" --logger=stderr 2>>"$dir/sssd.log" &
    sssd=\$!
    echo \$sssd > "$dir/sssd.pid"
}
start_sssd
trap 'kill \$sssd 2>/dev/null; wait' EXIT
trap 'exit 0' TERM
echo \$\$ > "$dir/namespace.pid"
# sssd gone: started again if \`restart\` asked for it, else the namespace ends.
while kill -0 $owner 2>/dev/null; do
    if ! kill -0 \$sssd 2>/dev/null; then
        [ -f "$dir/restart" ] || break
        rm -f "$dir/restart"
        start_sssd
    fi
    sleep 0.1
done
NAMESPACE
    rm -f "$dir/namespace.pid"
    unshare -m bash "$dir/namespace.sh" </dev/null >"$dir/namespace.log" 2>&1 &
    for _ in $(seq 200); do
        [ -f "$dir/namespace.pid" ] && inside test -S /var/lib/sss/pipes/pam 2>/dev/null && exit 0
        sleep 0.1
    done
    echo "side-by-side.sh: sssd did not start:" >&2
    cat "$dir/namespace.log" "$dir/sssd.log" >&2 2>/dev/null || true
    exit 1
    ;;
run)
    shift 2
    inside "$@"
    ;;
restart)
    old=$(cat "$dir/sssd.pid")
    touch "$dir/restart"
    kill "$old"
    for _ in $(seq 300); do
        new=$(cat "$dir/sssd.pid" 2>/dev/null || true)
        if [ -n "$new" ] && [ "$new" != "$old" ] && inside test -S /var/lib/sss/pipes/pam 2>/dev/null; then exit 0; fi
        sleep 0.1
    done
    echo "side-by-side.sh: sssd did not start again:" >&2
    tail -20 "$dir/sssd.log" >&2 2>/dev/null || true
    exit 1
    ;;
stop)
    # sssd first (it ends its children), then the namespace's holder; killed outright if either lingers (a
    # caller that ignores SIGTERM passes that on to what it starts).
    for file in sssd.pid namespace.pid; do
        [ -f "$dir/$file" ] || continue
        pid=$(cat "$dir/$file")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || continue 2; sleep 0.1; done
        pkill -KILL -P "$pid" 2>/dev/null || true
        kill -KILL "$pid" 2>/dev/null || true
    done
    ;;
*)
    echo "usage: side-by-side.sh start|run|stop DIR ..." >&2
    exit 64
    ;;
esac
