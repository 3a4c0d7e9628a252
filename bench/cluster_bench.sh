#!/usr/bin/env bash
# Workers through NATS JetStream (issue 28): sixteen validations of a fixed
# CPU-light 2-second job (`sleep 2`) from four callers at once (four loop
# ids, four calls each, as four code loops' validations arrive), with 0
# workers (this machine's heavy lane, one slot), then 1, 2 and 4 workers
# (one slot each). Prints wall time against the ideal (16 × 2 s) / workers,
# and the per-job dispatch overhead from each tool.finished event's
# `dispatch` (pickup: queued to a worker's start; overhead: the whole wait
# beyond the job's run time — pickup, checkout, the result's way back),
# p50 and p99. Then one redelivery: a worker SIGKILLed 0.5 s into a job,
# and the time until the job's result arrived from the other worker,
# against ack_wait_s + the run time.
#
#   bench/cluster_bench.sh [RUNS]     (default 3; LOOPR_BIN=build/bin)
#
# The real nats-server (-js, loopback, a temporary store), the real looprd
# with its own temp socket, config and state, real workers (loopr-runner
# --join) as separate processes. Medians of RUNS for each worker count.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${LOOPR_BIN:-$PWD/build/bin}
runs=${1:-3}
nats_server=$(command -v nats-server || echo /usr/sbin/nats-server)
base=$(mktemp -d /tmp/loopr-clusterbench-XXXXXX)
export LOOPR_CONFIG_DIR=$base/config LOOPR_STATE_DIR=$base/state LOOPR_SOCKET=$base/run/looprd.sock
ctl() { "$bin/looprctl" "$@"; }
pids=()
cleanup() {
  ctl daemon stop >/dev/null 2>&1 || true
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ "${KEEP:-}" = 1 ] || rm -rf "$base"
}
trap cleanup EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost \
  GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=nats://127.0.0.1:$port

repo=$base/work/repo
mkdir -p "$repo" "$base/config"
printf 'sleep 2\necho validated\n' > "$repo/v.sh"
printf '# bench\n' > "$repo/README.md"
git -C "$repo" init -q -b main && git -C "$repo" add -A && git -C "$repo" commit -q -m init

start_nats() {
  rm -rf "$base/nats" && mkdir -p "$base/nats"
  "$nats_server" -js -sd "$base/nats" -a 127.0.0.1 -p "$port" > "$base/nats.log" 2>&1 &
  nats_pid=$!
  pids+=("$nats_pid")
  for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && return; sleep 0.05; done
  echo "nats-server did not start" >&2; exit 1
}

start_looprd() {  # start_looprd WORKERS
  {
    printf '[sandbox]\nworktree_roots = ["%s"]\n' "$base/work"
    printf '[commands]\nvalidate = "sh v.sh"\n[lanes.heavy]\nslots = 1\n'
    if [ "$1" -gt 0 ]; then
      printf '[cluster]\nnats_url = "%s"\nack_wait_s = 2\nqueue_timeout_s = 120\n' "$url"
    fi
  } > "$base/config/loopr.toml"
  ctl daemon start > /dev/null
}

cluster_json() { ctl --json workers; }

start_workers() {  # start_workers N
  workers=()
  for i in $(seq "$1"); do
    mkdir -p "$base/workers/w$i"
    "$bin/loopr-runner" --join "$url" --state "$base/workers/w$i" --id "w$i" --slots 1 \
      --tool "$bin/loopr-tool" > "$base/workers/w$i.log" 2>&1 &
    workers+=($!)
    pids+=($!)
  done
  for _ in $(seq 200); do
    [ "$(cluster_json | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("workers",[])))')" -ge "$1" ] && return
    sleep 0.05
  done
  echo "the workers did not show up" >&2; exit 1
}

stop_all() {
  ctl daemon stop > /dev/null 2>&1 || true
  for p in "${workers[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${workers[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  kill "$nats_pid" 2>/dev/null || true; wait "$nats_pid" 2>/dev/null || true
  workers=()
}

# one_run WORKERS: prints "wall_s pickup_p50 pickup_p99 overhead_p50 overhead_p99"
one_run() {
  local n=$1 events=$base/events.jsonl
  start_nats
  start_looprd "$n"
  [ "$n" -gt 0 ] && start_workers "$n"
  # A first call warms each side (the worker's first bundle and checkout).
  ctl call validate '{}' --worktree "$repo" > /dev/null 2>&1 || true
  ctl --json events --topic tool.finished --count 16 > "$events" &
  local listener=$!
  sleep 0.3
  local t0 t1
  t0=$(date +%s.%N)
  local callers=()
  for caller in 1 2 3 4; do
    ( for _ in 1 2 3 4; do ctl call validate '{}' --worktree "$repo" --loop-id "bench-$caller" > /dev/null 2>&1; done ) &
    callers+=($!)
  done
  for p in "${callers[@]}"; do wait "$p" || true; done
  t1=$(date +%s.%N)
  wait "$listener" 2>/dev/null || true
  python3 - "$events" "$t0" "$t1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def pct(v, p):
    if not v: return float("nan")
    v = sorted(v); k = (len(v) - 1) * p / 100; f = int(k); c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)
d = [r["data"].get("dispatch", {}) for r in rows]
pick = [x["pickup_ms"] for x in d if "pickup_ms" in x]
over = [x["overhead_ms"] for x in d if "overhead_ms" in x]
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.2f} {pct(pick,50):.2f} {pct(pick,99):.2f} {pct(over,50):.2f} {pct(over,99):.2f} {len(rows)}")
PY
  stop_all
}

median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!="nan"]; print(f"{statistics.median(v):.2f}" if v else "-")' "$@"; }

echo "machine: $(nproc) cores, $(uname -r); $runs runs per row"
printf '%-8s %8s %8s %7s  %-10s %-10s %-10s %-10s\n' workers wall_s ideal_s ratio pickup_p50 pickup_p99 ovh_p50 ovh_p99
for n in ${ROWS:-0 1 2 4}; do
  [ "$n" = none ] && continue  # ROWS=none: the redelivery only
  walls=() p50=() p99=() o50=() o99=()
  for r in $(seq "$runs"); do
    one_run "$n" > "$base/row"  # not < <(...): its cleanup must end before the next run
    read -r wall a b c d count < "$base/row"
    echo "  run $r, $n workers: wall $wall s, pickup p50 $a p99 $b ms, overhead p50 $c p99 $d ms ($count results)" >&2
    walls+=("$wall"); p50+=("$a"); p99+=("$b"); o50+=("$c"); o99+=("$d")
  done
  ideal=$(python3 -c "print(32.0 / max(1, $n))")
  wall=$(median "${walls[@]}")
  printf '%-8s %8s %8.1f %7s  %-10s %-10s %-10s %-10s\n' "$n" "$wall" "$ideal" \
    "$(python3 -c "print(f'{$wall / $ideal:.3f}')")" "$(median "${p50[@]}")" "$(median "${p99[@]}")" \
    "$(median "${o50[@]}")" "$(median "${o99[@]}")"
done

# Redelivery: two workers, one job, the one that took it killed 0.5 s in.
start_nats
start_looprd 2
start_workers 2
ctl call validate '{}' --worktree "$repo" > /dev/null 2>&1 || true
t0=$(date +%s.%N)
ctl --json call validate '{}' --worktree "$repo" > "$base/redelivered.json" 2>&1 &
call=$!
# The worker that took it says so in its log ("job c-2 ..."; c-1 warmed up).
victim=""
for _ in $(seq 200); do
  victim=$(grep -l "job c-2 " "$base"/workers/w*.log 2>/dev/null | head -1 | sed 's|.*/\(w[0-9]*\)\.log|\1|') || true
  [ -n "$victim" ] && break
  sleep 0.02
done
sleep 0.5
kill -9 "${workers[$((${victim#w} - 1))]}"
wait "$call" || true
t1=$(date +%s.%N)
python3 - "$base/redelivered.json" "$t0" "$t1" "$victim" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
took = float(sys.argv[3]) - float(sys.argv[2])
print(f"redelivery: {sys.argv[4]} killed 0.5 s into the job; result from {r.get('worker')} "
      f"({r.get('status')}) {took:.2f} s after the call (bound: 0.5 s + ack_wait 2 s + run 2 s "
      f"= 4.5 s, plus dispatch)")
PY
stop_all
