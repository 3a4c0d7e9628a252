#!/usr/bin/env bash
# loopr's main job, end to end on this machine: installs what is missing,
# builds, starts looprd with a default configuration in a temporary place,
# runs real tool calls through every lane with looprctl (a read, an edit, a
# grep, a command in no-net that shows the network refused, a command in net,
# a build on the heavy lane with its output streamed), shows an approval, and
# stops the daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh

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

# Privileged calls in the net lane wait for a person's approval.
[approval.lanes]
net = "ask"
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
call() { show ctl call "$@" --worktree "$repo" --loop-id demo; }

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

step "net lane: run_command waits for approval (approval.lanes net = \"ask\")"
ctl call run_command '{"command": "cat /proc/net/dev | tail -n +3 | cut -d: -f1"}' \
  --worktree "$repo" > "$base/net-call.out" 2>&1 &
net_call=$!
id=""
for _ in $(seq 100); do
  id=$(ctl --json approvals | grep -o '"id": *"a-[0-9]*"' | grep -o 'a-[0-9]*' | head -n 1)
  [ -n "$id" ] && break
  sleep 0.1
done
show ctl approvals
show ctl approve "$id"
wait "$net_call" || true
cat "$base/net-call.out"

step "heavy lane: build runs [commands] build, its output streamed as tool.output events"
timeout 30 "$bin/looprctl" events --topic tool.output --count 2 > "$base/events.out" 2>&1 &
events=$!
sleep 0.5  # let the subscription land before the build starts
call build '{}'
wait "$events" || true
echo "-- streamed events:"
cat "$base/events.out"

step "metrics"
ctl metrics

step "stop looprd"
ctl daemon stop
echo
echo "== demo done"
