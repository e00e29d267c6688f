#!/usr/bin/env bash
# Writes BENCHMARKS.md from a `make bench` run: the machine it ran on, the command, the table, what the
# goals mean (Benchmarks/goals.md) and the JSON.
#   Benchmarks/write-report.sh TABLE.txt REPORT.json > BENCHMARKS.md
set -eu
table=$1
json=$2
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
memory=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
cat <<HEADER
# Benchmarks

The latest full run of \`make bench\`, written by it. Every figure is measured against its baseline in the
same run; goals are ratios, marked met or not. Figures vary between runs and machines; what each goal
means, and what stops the ones not met, follows the table.

| | |
|---|---|
| date | $(date -u +"%Y-%m-%d %H:%M UTC") |
| commit | $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- . ':!BENCHMARKS.md' 2>/dev/null || echo " (with uncommitted changes)") |
| machine | $(nproc) × ${cpu:-unknown CPU}, ${memory}, $(uname -sr) |
| toolchain | $(swift --version 2>/dev/null | head -1) |
| command | \`make bench\` (as root: the whole-process figures place PAM services in /etc/pam.d and a throwaway user and sudoers rule for sudo) |

\`\`\`
HEADER
cat "$table"
echo '```'
echo
cat "$(dirname "$0")/goals.md"
cat <<MIDDLE

The same run as JSON (\`gatekeeper-bench --json\` prints it alone):

\`\`\`json
MIDDLE
python3 -m json.tool "$json"
echo '```'
