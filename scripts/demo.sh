#!/usr/bin/env bash
# loopr's main job, end to end on this machine: installs what is missing,
# builds, starts looprd with a default configuration in a temporary place,
# runs real tool calls through every lane with looprctl (a read, an edit, a
# grep, a command in no-net that shows the network refused, a command in net,
# a build on the heavy lane with its output streamed), shows an approval;
# then runs a real code loop with the scripted provider (a recorded session,
# examples/demo-loop/session.jsonl) on a sample repository whose test fails:
# the model reads and edits, the daemon's validation fails, the next
# iteration fixes it, validation passes; it shows the loop's branch, its
# diff, its tokens and cost, exports the session. Then a whole plan
# (examples/demo-plan/session.jsonl): the plan loop breaks a change into two
# specs (the second depends on the first), the plan is shown and approved
# from the command line, and loopr carries it out through specs, phases and
# code loops, each in its own worktree, merged up into the plan's branch;
# the tree, the branch's log and diff are shown, the plan is merged into
# main. Last, `looprctl mcp --http` serves the same tools to an MCP client
# (initialize, tools/list, a grep, a request without the token refused), and
# the daemon stops.
set -euo pipefail
cd "$(dirname "$0")/.."
# A first run in minutes: only the packages that building and running need,
# and only the binaries the demo runs (scripts/test.sh installs and builds
# the rest: tests, benchmarks, the package's tools). The time to the first
# tool call is printed there.
started=$SECONDS
./scripts/install-deps.sh --run
installed=$SECONDS
if [ ! -f build/CMakeCache.txt ]; then
  # A fresh build folder: without tests and benchmarks (scripts/test.sh
  # turns them on). One that has them keeps them; only these targets build.
  # No debug info (a third less compile time; bench/README.md, "CI build
  # time") and the gold linker, as CI builds.
  cmake -S . -B build -G Ninja -DLOOPR_BUILD_TESTS=OFF -DLOOPR_BUILD_BENCH=OFF \
    -DLOOPR_DEBUG_LEVEL=0 -DLOOPR_LINKER=gold >/dev/null
fi
cmake --build build --target looprd looprctl loopr-runner loopr-tool loopr-fetch loopr-tui
built=$SECONDS
first_call_said=false
say_first_call() {  # once, at the first tool call: how long it took to get here
  $first_call_said && return 0
  first_call_said=true
  local total=$((SECONDS - started))
  printf '(first tool call %d min %02d s after the demo started: packages %d s, build %d s, start %d s)\n' \
    $((total / 60)) $((total % 60)) $((installed - started)) $((built - installed)) $((SECONDS - built))
}

bin=$PWD/build/bin
base=$(mktemp -d /tmp/loopr-demo-XXXXXX)
export LOOPR_CONFIG_DIR=$base/config LOOPR_STATE_DIR=$base/state LOOPR_SOCKET=$base/run/looprd.sock
ctl() { "$bin/looprctl" "$@"; }
cleanup() {
  ctl daemon stop >/dev/null 2>&1 || true
  rm -rf "$base"
}
trap cleanup EXIT

repo=$base/work/greet
mkdir -p "$base/config" "$repo/src" "$repo/build"
cat > "$base/config/loopr.toml" <<TOML
[sandbox]
worktree_roots = ["$base/work"]

[commands]
build = "cc -Wall -o build/greet src/greet.c && ./build/greet"
test = "sh test.sh"

# The loops' model: a recorded session replayed (no network, no key). For a
# real model, see the README: [llm] provider = "anthropic", or an
# OpenAI-compatible server under [providers.NAME].
[providers.demo]
kind = "scripted"
script = "$PWD/examples/demo-loop/session.jsonl"
model = "claude-sonnet-4-5"

# The demo plan's recorded session: one file for the whole tree, each line
# keyed by the loop it answers.
[providers.demo-plan]
kind = "scripted"
script = "$PWD/examples/demo-plan/session.jsonl"
model = "claude-sonnet-4-5"

[llm]
provider = "demo"

# Privileged calls in the net lane wait for a person's approval.
[approval.lanes]
net = "ask"

# The net and heavy lanes reach the network only through looprd's egress
# proxy, which refuses loopback, private and cloud-metadata addresses. For
# the demo, one local address stands in for an allowed internet server.
[egress]
allowed_networks = ["127.0.0.2/32"]
TOML
printf 'build/\n' > "$repo/.gitignore"
printf 'generated\n' > "$repo/build/out.txt"
cat > "$repo/src/greet.c" <<'C'
#include <stdio.h>

int main(void) {
	printf("hello, world\n");
	return 0;
}
C
printf '# greet\nA sample repository for loopr.\n' > "$repo/README.md"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() {  # show CMD...: prints the command line, runs it, reports its exit status
  printf '$ looprctl'; printf ' %q' "${@:2}"; printf '\n'
  local status=0
  "$@" || status=$?
  [ "$status" -eq 0 ] || printf '(exit %d)\n' "$status"
}
call() { say_first_call; show ctl call "$@" --worktree "$repo" --loop-id demo; }

step "start looprd (config, state and socket under $base)"
ctl daemon start
ctl daemon status

step "no-net lane: read, edit, grep, glob"
call read_file '{"path": "src/greet.c"}'
call edit_file '{"path": "src/greet.c", "old_string": "hello, world", "new_string": "hello, loopr"}'
echo "-- an edit that does not match shows the nearest candidate, whitespace made visible:"
call edit_file '{"path": "src/greet.c", "old_string": "    return 0;", "new_string": "    return 1;"}'
call grep '{"pattern": "hello|generated", "context": 1}'
call glob '{"pattern": "**/*"}'
echo "-- paths that leave the worktree are refused:"
call read_file '{"path": "../../../etc/passwd"}'

step "no-net lane: the network is off (only lo exists, a connection is refused)"
call run_command_isolated '{"command": "cat /proc/net/dev | tail -n +3 | cut -d: -f1; bash -c \"echo > /dev/tcp/127.0.0.1/22\""}'

# approved_call TOOL ARGS: a net-lane call, approved from the command line
# once it waits (approval.lanes net = "ask"); prints the waiting list first
# when asked to with LIST=1.
approved_call() {
  ctl call "$1" "$2" --worktree "$repo" > "$base/net-call.out" 2>&1 &
  local net_call=$! id=""
  for _ in $(seq 100); do
    # sed, not head: with pipefail, a writer cut off by head fails the script.
    # || true: with pipefail, no waiting call yet (grep finds nothing) is not an error.
    id=$(ctl --json approvals | grep -o '"id": *"a-[0-9]*"' | grep -o 'a-[0-9]*' | sed -n 1p) || true
    [ -n "$id" ] && break
    sleep 0.1
  done
  [ "${LIST:-}" = 1 ] && show ctl approvals
  show ctl approve "$id"
  wait "$net_call" || true
  cat "$base/net-call.out"
}

step "net lane: run_command waits for approval (approval.lanes net = \"ask\"); only lo exists there too"
LIST=1 approved_call run_command '{"command": "cat /proc/net/dev | tail -n +3 | cut -d: -f1; echo \"HTTPS_PROXY=$HTTPS_PROXY\" | sed \"s/loopr:[0-9a-f]*@/loopr:<token>@/\""}'

step "net lane: out only through looprd's egress proxy — an allowed server is reached, the host's loopback is refused"
site=$base/site
mkdir -p "$site"
echo "hello from an allowed server" > "$site/index.html"
: > "$base/http.out"  # made now: the server's redirection happens in the child, maybe later
python3 -u -m http.server --bind 127.0.0.2 0 --directory "$site" >> "$base/http.out" 2>&1 &
server=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$base/http.out" | sed -n 1p)
  [ -n "$port" ] && break
  sleep 0.1
done
timeout 60 "$bin/looprctl" events --topic net.connect --count 2 > "$base/net-events.out" 2>&1 &
events=$!
sleep 0.5  # let the subscription land first
approved_call run_command "{\"command\": \"curl -sS http://127.0.0.2:$port/\"}"
approved_call run_command "{\"command\": \"curl -sS --noproxy '' http://127.0.0.1:$port/\"}"
wait "$events" || true
kill "$server" 2>/dev/null || true
echo "-- every connection is an event (net.connect), counted in looprctl metrics:"
cat "$base/net-events.out"

step "heavy lane: build runs [commands] build, its output streamed as tool.output events"
timeout 30 "$bin/looprctl" events --topic tool.output --count 2 > "$base/events.out" 2>&1 &
events=$!
sleep 0.5  # let the subscription land before the build starts
call build '{}'
wait "$events" || true
echo "-- streamed events:"
cat "$base/events.out"

step "a code loop: the model works in its own worktree until the daemon's validation passes"
calc=$base/work/calc
cp -r examples/demo-loop/repo "$calc"
git -C "$calc" init -q -b main
git -C "$calc" add -A
git -C "$calc" -c user.name=demo -c user.email=demo@localhost commit -q -m "calc: a sample with a failing test"
echo "-- the sample's test fails before the loop:"
(cd "$calc" && sh test.sh) || true
show ctl loop run --type code --repo "$calc" --validate "sh test.sh" --budget-usd 0.50 \
  "Make sh test.sh pass: calc.sh add gives the wrong answer."
loop_id=$(ctl --json loops | grep -o '"id": *"c[0-9]*"' | grep -o 'c[0-9]*' | tail -n 1)

step "the loop's branch, its diff, and what it cost"
show ctl loop show "$loop_id"
git -C "$calc" log --oneline "loop/$loop_id"
git -C "$calc" diff "main..loop/$loop_id"
echo "-- the user's branch is untouched:"
git -C "$calc" log --oneline main
echo "-- the session, exported in the scripted provider's format (replayable offline):"
ctl loop export "$loop_id" > "$base/session-export.jsonl"
wc -l < "$base/session-export.jsonl"
echo "-- the note the loop kept for later loops of this repository (memory_save), and a search:"
show ctl memory list --repo "$calc"
show ctl memory search --repo "$calc" "which operator does add use?"

step "a plan: a change broken into specs, approved, carried out, merged up into one branch"
planned=$base/work/calc-plan
cp -r examples/demo-loop/repo "$planned"
# This copy starts with add fixed (as the code loop above fixed it on its branch).
sed -i 's/add) echo \$((a - b))/add) echo $((a + b))/' "$planned/calc.sh"
git -C "$planned" init -q -b main
git -C "$planned" add -A
git -C "$planned" -c user.name=demo -c user.email=demo@localhost commit -q -m "calc: add and mul"
show ctl plan --provider demo-plan --repo "$planned" \
  "Add a sub operation to calc.sh with its tests, then document every operation."
plan_id=$(ctl --json loops --type plan | grep -o '"id": *"p[0-9]*"' | grep -o 'p[0-9]*' | tail -n 1)
plan_status() { ctl loops --type plan | awk -v id="$plan_id" '$1 == id { print $3 }'; }
if [ "${LOOPR_DEMO_TUI:-}" = 1 ] && [ "${CI:-}" != true ]; then
  # Optional: approve the plan from the TUI (README, "The TUI").
  echo "-- approve $plan_id from the TUI: in a second terminal run"
  echo "   LOOPR_SOCKET=$LOOPR_SOCKET $bin/looprctl tui --repo $planned"
  echo "   press 2 (Approvals), read the plan, press a; the demo waits for it."
  while [ "$(plan_status)" = awaiting_approval ]; do sleep 1; done
  while case "$(plan_status)" in queued|running|waiting) true ;; *) false ;; esac; do sleep 1; done
  echo "-- $plan_id is $(plan_status)"
else
  show ctl plan approve "$plan_id" --follow
fi
show ctl loops --tree

step "the plan's branch holds the whole result"
git -C "$planned" log --oneline --graph "loop/$plan_id" | sed -n 1,40p
git -C "$planned" diff --stat "main..loop/$plan_id"
git -C "$planned" diff "main..loop/$plan_id" -- calc.sh
echo "-- nothing touched main until now:"
git -C "$planned" log --oneline main
show ctl plan merge "$plan_id"
git -C "$planned" log --oneline -n 3 main
(cd "$planned" && sh tests/sub.sh && sh examples.sh)

step "any MCP host: looprctl mcp serves these tools (stdio for claude mcp add; here Streamable HTTP with its token)"
mcp_log=$base/mcp.log
"$bin/looprctl" mcp --worktree "$repo" --http 127.0.0.1:0 2>"$mcp_log" &
mcp_pid=$!
mcp_url=""
for _ in $(seq 1 100); do
  mcp_url=$(sed -n 's/^loopr mcp: listening on //p' "$mcp_log")
  [ -n "$mcp_url" ] && break
  sleep 0.1
done
[ -n "$mcp_url" ] || { cat "$mcp_log"; exit 1; }
cat "$mcp_log"
mcp_token=$(cat "$LOOPR_STATE_DIR/mcp-http.token")
mcp_session=""
mcp_post() {  # mcp_post JSON: one JSON-RPC message; prints the body, headers in $base/mcp.headers
  curl -sS -D "$base/mcp.headers" -H "Authorization: Bearer $mcp_token" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    ${mcp_session:+-H "Mcp-Session-Id: $mcp_session"} --data "$1" "$mcp_url"
}
mcp_post '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}' |
  python3 -c 'import json, sys; r = json.load(sys.stdin)["result"]; print("-- initialize:", r["serverInfo"]["name"], r["serverInfo"]["version"], "speaking MCP", r["protocolVersion"])'
mcp_session=$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *//p' "$base/mcp.headers" | tr -d '\r')
mcp_post '{"jsonrpc":"2.0","method":"notifications/initialized"}'
mcp_post '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' |
  python3 -c 'import json, sys; print("-- tools/list:", ", ".join(t["name"] for t in json.load(sys.stdin)["result"]["tools"]))'
echo "-- tools/call grep {pattern: \"printf\"}, answered as a server-sent event stream:"
mcp_post '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"grep","arguments":{"pattern":"printf"}}}' |
  sed -n 's/^data: //p' | tail -n 1 |
  python3 -c 'import json, sys; r = json.load(sys.stdin)["result"]; print("   isError:", r["isError"]); print("  ", json.dumps(r["structuredContent"])[:300])'
echo "-- the same request without the token is refused: HTTP $(curl -s -o /dev/null -w '%{http_code}' \
  -H 'Content-Type: application/json' --data '{"jsonrpc":"2.0","id":4,"method":"ping"}' "$mcp_url")"
kill "$mcp_pid"
wait "$mcp_pid" || true

step "metrics"
ctl metrics

step "stop looprd"
ctl daemon stop
echo
echo "== demo done"
