#!/bin/bash
# Starts a throwaway OpenID Connect provider (Debian's glewlwyd, on a loopback port, with its own database,
# keys and configuration in a private temporary directory; nothing of the system's is touched) and runs
# the REPL against it. Two environments, as a team would have them: "dev" (tokens signed RS256) and "qa"
# (ES256), each a configuration file of its own. The provider is stopped however the REPL ends.
# Accounts: alice / wonderland-2026 (groups staff, readers), bob / builder-2026.
#
# usage: Examples/oidc/demo.sh PATH-TO-gatekeeper-repl      (make oidc-demo runs it)
#   OIDC_ENV=dev|qa      which environment to sign in to (default dev)
#   OIDC_FLOW=device|password
#                        device (default): the REPL shows a URL and a code to approve in a browser (or from
#                        another terminal, with the approve command it prints); password: asks the password
set -euo pipefail
repl=${1:?usage: demo.sh PATH-TO-gatekeeper-repl}
environment=${OIDC_ENV:-dev}
flow=${OIDC_FLOW:-device}
here=$(cd "$(dirname "$0")" && pwd)
# The REPL reads its configuration only from directories no one else may write: not /tmp.
. "$here/../../Packaging/private-tmp.sh"
work=$(private_tmp gatekeeper-oidc-demo)
chmod 700 "$work"
cleanup() {
    "$here/glewlwyd.sh" stop "$work/provider" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
install -d -m 0700 "$work/provider"
DEVICE_INTERVAL=2 "$here/glewlwyd.sh" start "$work/provider" >/dev/null
# shellcheck disable=SC1091
. "$work/provider/settings.env"
printf '%s\n' "$CLIENT_SECRET" > "$work/client-secret"
chmod 600 "$work/client-secret"
for name in dev qa; do
    issuer=$ISSUER
    [ "$name" = qa ] && issuer=$ES256_ISSUER
    sed -e "s|@ISSUER@|$issuer|" -e "s|@CLIENT_ID@|$CLIENT_ID|" -e "s|@SECRET@|$work/client-secret|" \
        -e "s|@FLOW@|$flow|" -e "s|@TOKENS@|$work/tokens-$name|" "$here/$name.conf" > "$work/$name.conf"
    # The examples are for real providers (https://); this one is on loopback, over plain http.
    sed -i 's|^\(required oidc .*\)$|\1 allow_http=yes|' "$work/$name.conf"
    chmod 600 "$work/$name.conf"
done
echo "A throwaway OpenID Connect provider, environment $environment: $(grep -o 'issuer=[^ ]*' "$work/$environment.conf")"
echo "Accounts: alice / wonderland-2026 (staff, readers), bob / builder-2026. Type login, then profile."
[ "$flow" = device ] &&
    echo "To approve a code from another terminal: $here/glewlwyd.sh approve $work/provider alice wonderland-2026 CODE"
"$repl" --config "$work/$environment.conf" --state-dir "$work"
