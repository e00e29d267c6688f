# private_tmp PREFIX: makes and prints a fresh directory that no one but this user (or root) may write, up
# to / — where configuration files pass the tools' directory rule, which refuses /tmp. Sourced by the
# scripts that write configurations: root's /run, else the private runtime directory, else the home
# directory, else /tmp (whose files the tools will then refuse).
private_tmp() {
    local base=/tmp candidate
    for candidate in $([ "$(id -u)" = 0 ] && echo /run) "${XDG_RUNTIME_DIR:-}" "/run/user/$(id -u)" "${HOME:-}"; do
        if [ -n "$candidate" ] && [ -d "$candidate" ] && { [ -O "$candidate" ] || [ "$(id -u)" = 0 ]; } \
            && [ -z "$(find "$candidate" -maxdepth 0 -perm /022)" ]; then
            base=$candidate
            break
        fi
    done
    mktemp -d "$base/$1.XXXXXX"
}
