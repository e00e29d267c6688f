#!/bin/bash
# Runs a throwaway glewlwyd (Debian package, 2.7.5) OpenID Connect provider on 127.0.0.1 for tests and
# demos. Everything it writes is in DIR: a private sqlite3 database made from the packaged schema, its own
# config file, fresh signing keys, the log and the pid. The system service and /etc are not touched.
# Facts learned on the way, and curl requests for every flow: README-glewlwyd.txt next to this script.
#
# usage: glewlwyd.sh start DIR [PORT]   DIR: an existing, empty directory of mode 0700; PORT: default a free
#                                       one. Prints the issuer; writes DIR/settings.env. Environment:
#                                       DEVICE_EXPIRES (600 s), DEVICE_INTERVAL (5 s), ACCESS_TOKEN_TTL (3600 s)
#        glewlwyd.sh approve DIR USER PASSWORD USER_CODE
#                                       approves a device code as the person's browser would: log in, grant
#                                       consent, submit the code. Exit 0 only if glewlwyd accepted it.
#        glewlwyd.sh stop DIR           stops the server started in DIR (idempotent)
#
# Configured by start: issuer http://127.0.0.1:PORT/api/oidc (RS256) and a second instance
# http://127.0.0.1:PORT/api/oidc-es256 (ES256); users alice / wonderland-2026 (groups staff, readers) and
# bob / builder-2026; confidential client gatekeeper / gatekeeper-client-secret (device_code, password,
# refresh_token), confidential client gatekeeper-hash whose secret holds '#', '&', '+' and '%' (password; for
# how a secret is sent: glewlwyd does not form-decode HTTP Basic's credentials, RFC 6749 §2.3.1), public
# client gatekeeper-public (device_code, refresh_token, delete_token); scopes
# openid profile email; admin / password (the schema's default admin).
set -euo pipefail
umask 077

SCHEMA=/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz
WEBAPP=/usr/share/glewlwyd/webapp
WEBAPP_CONFIG=/usr/share/glewlwyd/templates/config.json
CLIENT_ID=gatekeeper
CLIENT_SECRET=gatekeeper-client-secret
PUBLIC_CLIENT_ID=gatekeeper-public
HASH_CLIENT_ID=gatekeeper-hash
HASH_CLIENT_SECRET='gatekeeper#client&secret+1%41'
ADMIN_USER="admin"
ADMIN_PASSWORD="password"

die() {
    printf 'glewlwyd.sh: %s\n' "$*" >&2
    exit 1
}

usage() {
    sed -n 's/^# \{0,1\}//; /^usage:/,/^$/p' "$0" | sed '/^$/d' >&2
    exit 2
}

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || die "python3 is missing (apt-get install python3)"

need_tools() {
    local tool package
    for tool in glewlwyd:glewlwyd curl:curl sqlite3:sqlite3 openssl:openssl zcat:gzip; do
        package=${tool#*:}
        tool=${tool%%:*}
        command -v "$tool" >/dev/null || die "$tool is missing (apt-get install $package)"
    done
}

# The absolute path of an existing directory.
abs_dir() {
    [ -d "$1" ] || die "$1: no such directory"
    (cd "$1" && pwd -P)
}

is_uint() {
    case $1 in '' | *[!0-9]*) return 1 ;; esac
    [ "${#1}" -le 9 ]
}

port_is_free() {
    "$PY" - "$1" <<'EOF'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
EOF
}

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# One value from DIR/settings.env.
setting() {
    local value
    value=$(sed -n "s/^$2=//p" "$1/settings.env" | head -n 1)
    [ -n "$value" ] || die "$1/settings.env has no $2"
    printf '%s\n' "$value"
}

# The pid in DIR/glewlwyd.pid if that process is the glewlwyd this script started in DIR.
running_pid() {
    local pid
    [ -f "$1/glewlwyd.pid" ] || return 1
    pid=$(cat "$1/glewlwyd.pid")
    is_uint "$pid" || return 1
    [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF "glewlwyd -c $1/glewlwyd.conf" || return 1
    printf '%s\n' "$pid"
}

# http METHOD URL [BODY-FILE]: one request with the cookie jar $JAR; the status goes to $CODE, the body
# to the file $RESP, a redirect target to $LOCATION. Redirects are not followed.
http() {
    local args=(-sS --max-time 15 -o "$RESP" -w '%{http_code} %{redirect_url}' -X "$1" -b "$JAR" -c "$JAR")
    local out
    [ -z "${3-}" ] || args+=(-H 'Content-Type: application/json' --data-binary "@$3")
    out=$(curl "${args[@]}" "$2") || die "$1 $2: curl failed"
    CODE=${out%% *}
    LOCATION=${out#* }
}

# admin METHOD PATH [BODY-FILE]: an admin API request that must answer 200.
admin() {
    http "$1" "$API$2" "${3-}"
    [ "$CODE" = 200 ] || die "$1 /api$2 answered HTTP $CODE: $(head -c 600 "$RESP")"
}

STARTED_PID=
STARTED_DIR=
TMP_DIR=
on_exit() {
    local status=$?
    if [ "$status" != 0 ] && [ -n "$STARTED_PID" ]; then
        kill "$STARTED_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$STARTED_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$STARTED_PID" 2>/dev/null || true
        rm -f "$STARTED_DIR/glewlwyd.pid"
        printf 'glewlwyd.sh: stopped the glewlwyd it started (pid %s); last lines of %s:\n' \
            "$STARTED_PID" "$STARTED_DIR/glewlwyd.log" >&2
        tail -n 15 "$STARTED_DIR/glewlwyd.log" >&2 || true
    fi
    [ -z "$TMP_DIR" ] || rm -rf "$TMP_DIR"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

write_config() {
    cat > "$DIR/glewlwyd.conf" <<CONF
# Private glewlwyd configuration written by glewlwyd.sh. No use_secure_connection line: glewlwyd 2.7.5
# refuses to start on one (even =false) unless secure_connection_key_file and _pem_file are set too.
port=$PORT
bind_address="127.0.0.1"
external_url="http://127.0.0.1:$PORT"
login_url="login.html"
api_prefix="api"
static_files_path="$DIR/webapp/"
allow_origin="*"
log_mode="file"
log_level="INFO"
log_file="$DIR/glewlwyd.log"
cookie_secure=0
cookie_same_site="empty"
session_expiration=2419200
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
login_api_enabled=true
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="/usr/lib/glewlwyd/user"
client_module_path="/usr/lib/glewlwyd/client"
user_auth_scheme_module_path="/usr/lib/glewlwyd/scheme"
plugin_module_path="/usr/lib/glewlwyd/plugin"
hash_algorithm="SHA512"
database =
{
  type = "sqlite3"
  path = "$DIR/glewlwyd.db"
};
static_files_mime_types =
(
  { extension = ".html" mime_type = "text/html" },
  { extension = ".css" mime_type = "text/css" },
  { extension = ".js" mime_type = "application/javascript" },
  { extension = ".json" mime_type = "application/json" },
  { extension = ".png" mime_type = "image/png" },
  { extension = ".ico" mime_type = "image/x-icon" },
  { extension = ".woff" mime_type = "font/woff" },
  { extension = ".woff2" mime_type = "font/woff2" },
  { extension = ".ttf" mime_type = "font/ttf" },
  { extension = ".map" mime_type = "application/octet-stream" }
)
CONF
}

# A copy of the packaged web app (login and consent pages, for a person with a browser) with a config.json
# of its own: the package's is a dangling link to a directory, and glewlwyd serves no symbolic links.
make_webapp() {
    local entry
    mkdir "$DIR/webapp"
    for entry in "$WEBAPP"/*; do
        [ "${entry##*/}" = config.json ] || cp -R "$entry" "$DIR/webapp/"
    done
    cp "$WEBAPP_CONFIG" "$DIR/webapp/config.json"
}

# The JSON bodies of the admin API requests, in DIR/setup.
write_bodies() {
    PORT=$PORT DIR=$DIR DEVICE_EXPIRES=$DEVICE_EXPIRES DEVICE_INTERVAL=$DEVICE_INTERVAL \
    ACCESS_TOKEN_TTL=$ACCESS_TOKEN_TTL HASH_CLIENT_SECRET=$HASH_CLIENT_SECRET "$PY" - <<'EOF'
import json, os
env = os.environ
d, port = env["DIR"], env["PORT"]
def write(name, value):
    with open(os.path.join(d, "setup", name + ".json"), "w") as f:
        json.dump(value, f)
def read(name):
    with open(os.path.join(d, name)) as f:
        return f.read()
write("admin-login", {"username": "admin", "password": "password"})
for name in ("profile", "email"):
    write("scope-" + name, {"name": name, "display_name": name.capitalize(),
                            "description": "OpenID Connect scope " + name,
                            "password_required": True, "password_max_age": 0, "scheme": {}})
write("user-alice", {"username": "alice", "password": "wonderland-2026", "name": "Alice Liddell",
                     "email": "alice@example.test", "enabled": True,
                     "scope": ["openid", "profile", "email"], "groups": ["staff", "readers"]})
write("user-bob", {"username": "bob", "password": "builder-2026", "name": "Bob Builder",
                   "email": "bob@example.test", "enabled": True, "scope": ["openid", "profile", "email"]})
write("client-gatekeeper", {
    "client_id": "gatekeeper", "name": "Gatekeeper", "description": "confidential test client",
    "confidential": True, "client_secret": "gatekeeper-client-secret", "enabled": True,
    "authorization_type": ["device_authorization", "password", "refresh_token"],
    "token_endpoint_auth_method": ["client_secret_basic", "client_secret_post"],
    "redirect_uri": [], "scope": []})
write("client-gatekeeper-hash", {
    "client_id": "gatekeeper-hash", "name": "Gatekeeper (a secret with #)", "description": "test client",
    "confidential": True, "client_secret": env["HASH_CLIENT_SECRET"], "enabled": True,
    "authorization_type": ["password"],
    "token_endpoint_auth_method": ["client_secret_basic", "client_secret_post"],
    "redirect_uri": [], "scope": []})
write("client-gatekeeper-public", {
    "client_id": "gatekeeper-public", "name": "Gatekeeper (public)", "description": "public test client",
    "confidential": False, "enabled": True,
    "authorization_type": ["device_authorization", "refresh_token", "delete_token"],
    "redirect_uri": [], "scope": []})
write("grant", {"scope": "openid profile email"})
def plugin(name, jwt_type, key):
    return {"module": "oidc", "name": name, "display_name": "OpenID Connect " + name, "enabled": True,
            "parameters": {
                "iss": "http://127.0.0.1:%s/api/%s" % (port, name),
                "jwt-type": jwt_type, "jwt-key-size": "256",
                "key": read(key + ".key"), "cert": read(key + ".pub"), "jwks-show": True,
                "access-token-duration": int(env["ACCESS_TOKEN_TTL"]),
                "refresh-token-duration": 1209600, "code-duration": 600,
                "refresh-token-rolling": True, "refresh-token-one-use": "never",
                "allow-non-oidc": True,
                "auth-type-code-enabled": True, "auth-type-token-enabled": False,
                "auth-type-none-enabled": False, "auth-type-client-enabled": False,
                "auth-type-password-enabled": True, "auth-type-device-enabled": True,
                "auth-type-refresh-enabled": True,
                "device-authorization-expiration": int(env["DEVICE_EXPIRES"]),
                "device-authorization-interval": int(env["DEVICE_INTERVAL"]),
                "introspection-revocation-allowed": True,
                "introspection-revocation-allow-target-client": True,
                "subject-type": "public",
                "name-claim": "mandatory", "email-claim": "mandatory", "scope-claim": "no",
                "claims": [
                    {"name": "preferred_username", "user-property": "username", "type": "string",
                     "mandatory": True, "on-demand": False},
                    {"name": "groups", "user-property": "groups", "type": "string",
                     "mandatory": True, "on-demand": False}],
                "allowed-scope": ["openid", "profile", "email"]}}
write("plugin-oidc", plugin("oidc", "rsa", "oidc-rs256"))
write("plugin-oidc-es256", plugin("oidc-es256", "ecdsa", "oidc-es256"))
EOF
}

# The user module "database" with one more property, groups (several values), that the claims can use.
add_groups_property() {
    "$PY" - "$RESP" "$DIR/setup/user-module.json" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    module = json.load(f)
module["parameters"]["data-format"]["groups"] = {
    "multiple": True, "read": True, "write": True, "profile-read": True, "profile-write": False}
with open(sys.argv[2], "w") as f:
    json.dump(module, f)
EOF
}

check_discovery() {
    "$PY" - "$RESP" "$1" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    d = json.load(f)
assert d.get("issuer") == sys.argv[2], "issuer is %r" % d.get("issuer")
for key in ("device_authorization_endpoint", "token_endpoint", "revocation_endpoint", "userinfo_endpoint"):
    assert key in d, key + " missing"
EOF
}

cmd_start() {
    [ $# -eq 1 ] || [ $# -eq 2 ] || usage
    need_tools
    DIR=$(abs_dir "$1")
    case $DIR in *[\"\\\$\`]* | *$'\n'*) die "$DIR: a path with quotes, backslashes or newlines can't go in a config file" ;; esac
    [ -O "$DIR" ] || die "$DIR: not owned by you"
    [ "$(stat -c %a "$DIR")" = 700 ] || die "$DIR: mode is $(stat -c %a "$DIR"), must be 0700"
    [ -z "$(ls -A "$DIR")" ] || die "$DIR: not empty"
    [ -r "$SCHEMA" ] || die "$SCHEMA is missing (apt-get install glewlwyd)"
    if [ $# -eq 2 ]; then
        PORT=$2
        if ! is_uint "$PORT" || [ "$PORT" -lt 1 ] || [ "$PORT" -gt 65535 ]; then
            die "$PORT: not a port number"
        fi
        port_is_free "$PORT" || die "port $PORT on 127.0.0.1 is in use"
    else
        PORT=$(free_port)
    fi
    DEVICE_EXPIRES=${DEVICE_EXPIRES:-600}
    DEVICE_INTERVAL=${DEVICE_INTERVAL:-5}
    ACCESS_TOKEN_TTL=${ACCESS_TOKEN_TTL:-3600}
    for value in "$DEVICE_EXPIRES" "$DEVICE_INTERVAL" "$ACCESS_TOKEN_TTL"; do
        if ! is_uint "$value" || [ "$value" -lt 1 ]; then
            die "DEVICE_EXPIRES, DEVICE_INTERVAL and ACCESS_TOKEN_TTL must be positive numbers of seconds"
        fi
    done
    local base=http://127.0.0.1:$PORT
    API=$base/api
    local issuer=$API/oidc

    zcat "$SCHEMA" | sqlite3 -bail "$DIR/glewlwyd.db" >/dev/null || die "could not create $DIR/glewlwyd.db"
    openssl genrsa -out "$DIR/oidc-rs256.key" 2048 2>/dev/null || die "openssl genrsa failed"
    openssl rsa -in "$DIR/oidc-rs256.key" -pubout -out "$DIR/oidc-rs256.pub" 2>/dev/null ||
        die "openssl rsa -pubout failed"
    openssl ecparam -name prime256v1 -genkey -noout -out "$DIR/oidc-es256.key" 2>/dev/null ||
        die "openssl ecparam failed"
    openssl ec -in "$DIR/oidc-es256.key" -pubout -out "$DIR/oidc-es256.pub" 2>/dev/null ||
        die "openssl ec -pubout failed"
    make_webapp
    write_config
    mkdir "$DIR/setup"
    write_bodies

    nohup glewlwyd -c "$DIR/glewlwyd.conf" </dev/null >>"$DIR/glewlwyd.log" 2>&1 &
    STARTED_PID=$!
    STARTED_DIR=$DIR
    echo "$STARTED_PID" > "$DIR/glewlwyd.pid"
    JAR=$DIR/setup/admin.cookies
    RESP=$DIR/setup/response
    local answered=
    for _ in $(seq 150); do
        kill -0 "$STARTED_PID" 2>/dev/null || die "glewlwyd exited while starting"
        if [ "$(curl -s --max-time 1 -o /dev/null -w '%{http_code}' "$base/config" || true)" = 200 ]; then
            answered=1
            break
        fi
        sleep 0.1
    done
    [ -n "$answered" ] || die "glewlwyd did not answer on $base within 15 s"

    http POST "$API/auth/" "$DIR/setup/admin-login.json"
    [ "$CODE" = 200 ] || die "admin login failed: HTTP $CODE"
    admin GET /mod/user/database
    add_groups_property
    admin PUT /mod/user/database "$DIR/setup/user-module.json"
    admin PUT /mod/user/database/reset
    admin POST /scope/ "$DIR/setup/scope-profile.json"
    admin POST /scope/ "$DIR/setup/scope-email.json"
    admin POST /user/ "$DIR/setup/user-alice.json"
    admin POST /user/ "$DIR/setup/user-bob.json"
    admin POST /client/ "$DIR/setup/client-gatekeeper.json"
    admin POST /client/ "$DIR/setup/client-gatekeeper-public.json"
    admin POST /client/ "$DIR/setup/client-gatekeeper-hash.json"
    admin POST /mod/plugin/ "$DIR/setup/plugin-oidc.json"
    admin POST /mod/plugin/ "$DIR/setup/plugin-oidc-es256.json"
    # Consent given in advance (as the admin, by delegation), so no browser is needed; approve grants too.
    local user client
    for user in alice bob; do
        for client in "$CLIENT_ID" "$PUBLIC_CLIENT_ID" "$HASH_CLIENT_ID"; do
            admin PUT "/delegate/$user/auth/grant/$client" "$DIR/setup/grant.json"
        done
    done
    for name in oidc oidc-es256; do
        http GET "$API/$name/.well-known/openid-configuration"
        [ "$CODE" = 200 ] || die "discovery of $name answered HTTP $CODE"
        check_discovery "$API/$name" || die "discovery of $name is not as configured: $(head -c 600 "$RESP")"
    done
    http DELETE "$API/auth/"
    rm -rf "$DIR/setup"

    # A secret no shell line could hold unquoted: in a file of its own, as client_secret_file= reads it.
    printf '%s\n' "$HASH_CLIENT_SECRET" > "$DIR/hash-client-secret"
    cat > "$DIR/settings.env" <<ENV
ISSUER=$issuer
ES256_ISSUER=$API/oidc-es256
PORT=$PORT
BASE_URL=$base
CLIENT_ID=$CLIENT_ID
CLIENT_SECRET=$CLIENT_SECRET
PUBLIC_CLIENT_ID=$PUBLIC_CLIENT_ID
HASH_CLIENT_ID=$HASH_CLIENT_ID
HASH_CLIENT_SECRET_FILE=$DIR/hash-client-secret
ADMIN_USER=$ADMIN_USER
ADMIN_PASSWORD=$ADMIN_PASSWORD
USERS=alice:wonderland-2026,bob:builder-2026
DEVICE_EXPIRES=$DEVICE_EXPIRES
DEVICE_INTERVAL=$DEVICE_INTERVAL
ACCESS_TOKEN_TTL=$ACCESS_TOKEN_TTL
PID=$STARTED_PID
ENV
    STARTED_PID=
    echo "$issuer"
}

cmd_approve() {
    [ $# -eq 4 ] || usage
    DIR=$(abs_dir "$1")
    local user=$2 password=$3 code=$4
    [ -f "$DIR/settings.env" ] || die "$DIR: no settings.env (was glewlwyd.sh start run there?)"
    running_pid "$DIR" >/dev/null || die "the glewlwyd of $DIR is not running"
    case $code in '' | *[!A-Za-z0-9-]*) die "$code: not a user code" ;; esac
    local issuer
    issuer=$(setting "$DIR" ISSUER)
    API=$(setting "$DIR" BASE_URL)/api
    TMP_DIR=$(mktemp -d "$DIR/approve.XXXXXX")
    JAR=$TMP_DIR/cookies
    RESP=$TMP_DIR/response

    # 1. The person logs in (what login.html does): a session cookie.
    user=$user password=$password "$PY" -c 'import json, os
print(json.dumps({"username": os.environ["user"], "password": os.environ["password"]}))' > "$TMP_DIR/login.json"
    http POST "$API/auth/" "$TMP_DIR/login.json"
    rm -f "$TMP_DIR/login.json"
    [ "$CODE" = 200 ] || die "login as $user failed: HTTP $CODE"
    # 2. The code is looked up: the answer redirects to the login page with the client and the scopes.
    http GET "$issuer/device?code=$code"
    [ "$CODE" = 302 ] || die "device verification answered HTTP $CODE"
    case $LOCATION in *prompt=deviceCodeError*) die "user code $code is unknown, used or expired" ;; esac
    local request client scope
    request=$("$PY" - "$LOCATION" <<'EOF'
import sys, urllib.parse
query = urllib.parse.parse_qs(urllib.parse.urlsplit(sys.argv[1]).query)
print(query.get("client_id", [""])[0])
print(query.get("scope", [""])[0])
EOF
)
    client=$(sed -n 1p <<< "$request")
    scope=$(sed -n 2p <<< "$request")
    [ -n "$client" ] || die "unexpected answer to the user code: $LOCATION"
    # 3. Consent for the scopes asked (space-separated), as the consent page does.
    scope=$scope "$PY" -c 'import json, os; print(json.dumps({"scope": os.environ["scope"]}))' > "$TMP_DIR/grant.json"
    http PUT "$API/auth/grant/$client" "$TMP_DIR/grant.json"
    [ "$CODE" = 200 ] || die "granting $scope to $client failed: HTTP $CODE"
    # 4. The code is submitted: glewlwyd accepts it only with a redirect carrying prompt=deviceComplete.
    http GET "$issuer/device?code=$code&g_continue"
    case $LOCATION in
        *prompt=deviceComplete*) ;;
        *prompt=*) local prompt=${LOCATION##*prompt=}; die "glewlwyd refused the code: prompt=${prompt%%&*}" ;;
        *) die "glewlwyd did not accept the code (HTTP $CODE, $LOCATION)" ;;
    esac
    http DELETE "$API/auth/"
    echo "approved $code for $client ($scope) as $user"
}

cmd_stop() {
    [ $# -eq 1 ] || usage
    [ -d "$1" ] || { echo "glewlwyd.sh: $1: no such directory, nothing to stop"; return 0; }
    DIR=$(abs_dir "$1")
    local pid
    if ! pid=$(running_pid "$DIR"); then
        rm -f "$DIR/glewlwyd.pid"
        echo "not running"
        return 0
    fi
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    kill -0 "$pid" 2>/dev/null && die "glewlwyd (pid $pid) does not stop"
    rm -f "$DIR/glewlwyd.pid"
    echo "stopped (pid $pid)"
}

[ $# -ge 1 ] || usage
command=$1
shift
case $command in
    start) cmd_start "$@" ;;
    approve) cmd_approve "$@" ;;
    stop) cmd_stop "$@" ;;
    *) usage ;;
esac
