#!/usr/bin/env bash
# Warm worktrees (issue 25): time from loop.create to the first validation
# result of a code loop on (a) cJSON, a real CMake C project, and (b) Lua, a
# real plain-make project, against the same incremental build in the user's
# checkout and against a cold build, in one run. The real looprd with its own
# temp socket, config and state, a scripted model that makes a one-line edit
# of one source file, [worktrees] include bringing the checkout's build
# outputs in (per repository, [[repositories]]), and the validation being the
# incremental build plus the tests. Then a plan (one spec, three phases, three
# code loops) on a never-built cJSON checkout whose setup configures and
# builds: each loop's setup and first validation, to show the tree builds
# cold once (in the plan's worktree) and every loop below starts warm.
#
#   bench/worktree_prep_bench.sh [RUNS]     (default 3; LOOPR_BIN=build-bench/bin)
#
# The sources are Debian's orig tarballs, fetched into $LOOPR_BENCH_CACHE
# (default /tmp/loopr-bench-cache), never committed. Prints one line per
# measurement and the medians; figures are in bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${LOOPR_BIN:-$PWD/build-bench/bin}
runs=${1:-3}
cache=${LOOPR_BENCH_CACHE:-/tmp/loopr-bench-cache}
mkdir -p "$cache"
base=$(mktemp -d /tmp/loopr-prepbench-XXXXXX)
export LOOPR_CONFIG_DIR=$base/config LOOPR_STATE_DIR=$base/state LOOPR_SOCKET=$base/run/looprd.sock
ctl() { "$bin/looprctl" "$@"; }
cleanup() {
  ctl daemon stop >/dev/null 2>&1 || true
  [ "${KEEP:-}" = 1 ] || rm -rf "$base"
}
trap cleanup EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost \
  GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost

fetch() {  # fetch URL: the tarball in the cache
  local file=$cache/${1##*/}
  [ -s "$file" ] || curl -sSfL -o "$file" "$1"
  echo "$file"
}
cjson_tar=$(fetch http://deb.debian.org/debian/pool/main/c/cjson/cjson_1.7.15.orig.tar.gz)
lua_tar=$(fetch http://deb.debian.org/debian/pool/main/l/lua5.4/lua5.4_5.4.4.orig.tar.gz)

work=$base/work
mkdir -p "$work/cjson" "$work/lua" "$base/config"
tar xzf "$cjson_tar" -C "$work/cjson" --strip-components=1
tar xzf "$lua_tar" -C "$work/lua" --strip-components=1
printf 'build/\n' > "$work/cjson/.gitignore"
printf '*.o\n*.a\nsrc/lua\nsrc/luac\n' > "$work/lua/.gitignore"
# The plan's checkout: cJSON again, never built (no build/ to include).
mkdir -p "$work/cjson-plan"
tar xzf "$cjson_tar" -C "$work/cjson-plan" --strip-components=1
printf 'build/\nnotes/\n' > "$work/cjson-plan/.gitignore"
for p in cjson lua cjson-plan; do
  git -C "$work/$p" init -q -b main
  git -C "$work/$p" add -A
  git -C "$work/$p" commit -q -m "upstream"
done

# The same validation in the checkout and in the loop: incremental build + tests.
cjson_validate='cmake --build build -j2 && cd build && ctest -Q'
cjson_configure='cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DENABLE_CJSON_TEST=ON >/dev/null'
lua_validate='make -j2 posix >/dev/null && src/lua -e "assert(string.format(\"%d\", 6*7) == \"42\")"'
# The model's edit (and the same edit made by hand in the checkout).
# (one test's source: cJSON.c itself is #included by every test, so an edit
# of it rebuilds everything, in the checkout as much as in a worktree)
cjson_file=tests/parse_number.c
cjson_old='static void assert_is_number(cJSON \*number_item)'
lua_file=src/lua.c
lua_old='static const char \*progname = LUA_PROGNAME;'

session() {  # session FILE OLD: RUNS x (read, edit, complete)
  python3 - "$1" "$2" "$runs" <<'PY'
import json, sys
path, old, runs = sys.argv[1], sys.argv[2].replace('\\*', '*'), int(sys.argv[3])
turns = []
for i in range(runs):
    turns.append({"tool_calls": [{"id": f"r{i}", "name": "read_file", "arguments": {"path": path, "limit": 5}}]})
    turns.append({"tool_calls": [{"id": f"e{i}", "name": "edit_file", "arguments": {
        "path": path, "old_string": old, "new_string": "/* edited by the loop */\n" + old}}]})
    turns.append({"tool_calls": [{"id": f"c{i}", "name": "complete_task", "arguments": {"summary": "edited"}}]})
for t in turns:
    t.update({"stop_reason": "tool_use", "usage": {"input_tokens": 100, "output_tokens": 10}})
    print(json.dumps(t))
PY
}
session "$cjson_file" "$cjson_old" > "$base/config/cjson.jsonl"
# A plan of one spec with three phases, each with one code loop writing a
# file; every validation is the incremental build + tests (lines keyed by
# loop id, as the scripted provider plays every loop of the tree).
python3 - "$cjson_validate" > "$base/config/plan.jsonl" <<'PY'
import json, sys
validate = sys.argv[1]
def turn(calls): return {"tool_calls": calls, "stop_reason": "tool_use", "usage": {"input_tokens": 100, "output_tokens": 10}}
def call(i, name, args): return {"id": i, "name": name, "arguments": args}
lines = [dict(turn([call("cp", "create_plan", {"title": "Docs", "overview": "Three notes.", "specs": [
    {"name": "docs", "title": "Docs", "description": "Three notes.", "dependencies": []}]})]), loop="p1")]
phases = ["one", "two", "three"]
lines.append(dict(turn([call("cs", "create_spec", {"name": "docs", "title": "Docs", "overview": "Notes",
    "phases": [{"name": n, "title": n, "description": n} for n in phases]})]), loop="p1-s1"))
for i, n in enumerate(phases, 1):
    f = f"docs-{n}.md"
    lines.append(dict(turn([call("cph", "create_phase", {"name": n, "title": n, "objective": "write " + f,
        "tasks": [{"description": "write " + f, "file": f, "action": "create"}],
        "validation_command": f"test -f {f} && {validate}"})]), loop=f"p1-s1-ph{i}"))
    lines.append(dict(turn([call("w", "write_file", {"path": f, "content": n + "\n"}),
                            call("d", "complete_task", {"summary": "wrote " + f})]), loop=f"p1-s1-ph{i}-c1"))
for l in lines: print(json.dumps(l))
PY
session "$lua_file" "$lua_old" > "$base/config/lua.jsonl"

cat > "$base/config/loopr.toml" <<TOML
[sandbox]
worktree_roots = ["$work"]

[providers.cjson]
kind = "scripted"
script = "$base/config/cjson.jsonl"
model = "bench"

[providers.lua]
kind = "scripted"
script = "$base/config/lua.jsonl"
model = "bench"

[providers.plan]
kind = "scripted"
script = "$base/config/plan.jsonl"
model = "bench"

[llm]
provider = "cjson"

[[repositories]]
path = "$work/cjson-plan"
[repositories.worktrees]
include = ["build"]
setup = "$cjson_configure && cmake --build build -j2"

[[repositories]]
path = "$work/cjson"
[repositories.commands]
validate = "$cjson_validate"
[repositories.worktrees]
include = ["build"]

[[repositories]]
path = "$work/lua"
[repositories.commands]
validate = "$(printf '%s' "$lua_validate" | sed 's/\\/\\\\/g; s/"/\\"/g')"
[repositories.worktrees]
include = ["src/*.o", "src/*.a", "src/lua", "src/luac"]
TOML

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }
timed() {  # timed DIR COMMAND: seconds
  local t0 t1
  t0=$(now)
  (cd "$1" && sh -c "$2") > "$base/timed.out" 2>&1 || { cat "$base/timed.out" >&2; return 1; }
  t1=$(now)
  elapsed "$t0" "$t1"
}
edit_checkout() {  # edit_checkout DIR FILE OLD
  python3 - "$1/$2" "$3" <<'PY'
import sys
path, old = sys.argv[1], sys.argv[2].replace('\\*', '*')
text = open(path).read()
open(path, 'w').write(text.replace(old, "/* edited by hand */\n" + old, 1))
PY
}

ctl daemon start >/dev/null
results=$base/results.txt
: > "$results"

# A loop: seconds from loop.create to its first validation result, that
# validation's own duration, the include step's figures, the worktree's size.
measure_loop() {  # measure_loop PROJECT
  local p=$1 t0 id out
  t0=$(now)
  id=$(ctl --json loop run "edit $p" --repo "$work/$p" --provider "$p" --max-iterations 1 --detach |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("id") or d["loop"]["id"])')
  while :; do
    out=$(ctl --json loop show "$id")
    if printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin); d = d.get("loop", d)
its = d.get("iterations") or []
done = any("validation" in i for i in its) or d.get("status") in ("failed", "cancelled")
sys.exit(0 if done else 1)'; then break; fi
    sleep 0.05
  done
  local t1
  t1=$(now)
  ctl --json loop logs "$id" > "$base/logs-$id.json" 2>/dev/null || true
  python3 - "$p" "$(elapsed "$t0" "$t1")" "$out" "$base/logs-$id.json" <<'PY' >> "$results"
import json, sys, subprocess
p, total, show, logs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
loop = show.get("loop", show)
v = (loop.get("iterations") or [{}])[0].get("validation", {})
prep = {}
for line in open(logs):  # JSON Lines, one journal step each
    try:
        s = json.loads(line)
    except ValueError:
        continue
    if s.get("kind") == "worktree_prepared":
        prep = s.get("data", {}).get("include", {})
wt = loop.get("worktree", "")
du = subprocess.run(["du", "-sk", wt], capture_output=True, text=True).stdout.split()[0] if wt else "?"
print(f"{p} loop total_s={total} validation_s={v.get('duration_ms', 0)/1000:.2f} "
      f"passed={v.get('passed')} include_s={prep.get('duration_ms', 0)/1000:.2f} "
      f"files={prep.get('files')} bytes={prep.get('bytes')} reflinked={prep.get('reflinked')} "
      f"mtimes_aligned={prep.get('mtimes_aligned')} relocated={prep.get('files_relocated')} "
      f"runpaths_rewritten={prep.get('runpaths_rewritten')} relink_forced={prep.get('binaries_removed')} "
      f"worktree_kb={du} status={loop.get('status')}")
PY
  tail -1 "$results"
}

# One project's run: cold (after `clean`), incremental after the edit in the
# checkout (then undone and rebuilt, untimed), then the loop.
measure_project() {  # measure_project NAME CLEAN COLD VALIDATE FILE OLD
  local p=$1 dir=$work/$1 s
  (cd "$dir" && sh -c "$2")
  s=$(timed "$dir" "$3")
  echo "$p cold_s=$s" | tee -a "$results"
  edit_checkout "$dir" "$5" "$6"
  s=$(timed "$dir" "$4")
  echo "$p incremental_s=$s" | tee -a "$results"
  git -C "$dir" checkout -q -- "$5"
  timed "$dir" "$4" >/dev/null
  measure_loop "$p"
}

for run in $(seq "$runs"); do
  # cJSON (CMake): cold = configure + build + tests from nothing.
  measure_project cjson "rm -rf build" "$cjson_configure && $cjson_validate" "$cjson_validate" \
    "$cjson_file" "$cjson_old"
  # Lua (make): cold = build + the check from nothing.
  measure_project lua "make -s clean >/dev/null" "$lua_validate" "$lua_validate" \
    "$lua_file" "$lua_old"
done

# A plan with three code loops on a checkout that was never built: the plan's
# worktree builds cold in its setup, every loop below it starts from its
# parent's worktree (build included) and its setup is incremental.
# A looprd with a fresh state, so the plan is p1 (the scripted session's
# lines are keyed by loop id); `plan` returns once the plan awaits approval.
ctl daemon stop >/dev/null
export LOOPR_STATE_DIR=$base/state-plan
ctl daemon start >/dev/null
t0=$(now)
ctl plan "Three notes" --repo "$work/cjson-plan" --provider plan > "$base/plan.out" 2>&1 || true
plan=p1
until ctl --json loop show "$plan" | grep -q '"status": *"awaiting_approval"'; do sleep 0.2; done
ctl plan approve "$plan" >/dev/null
until ctl --json loop show "$plan" | grep -Eq '"status": *"(completed|failed|blocked|cancelled)"'; do sleep 0.5; done
t1=$(now)
echo "plan status=$(ctl --json loop show "$plan" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("loop", d)["status"])') total_s=$(elapsed "$t0" "$t1")"
cat > "$base/plan_report.py" <<'PY'
import json, sys
setup = prep = val = None
for line in sys.stdin:
    try:
        s = json.loads(line)
    except ValueError:
        continue
    if s.get("kind") == "setup":
        setup = s["data"]
    if s.get("kind") == "worktree_prepared":
        prep = s["data"].get("include", {})
    if s.get("kind") == "validation" and val is None:
        val = s["data"]
def secs(d, k):
    return "%.2f" % (d[k] / 1000) if d and k in d else "-"
source = (prep or {}).get("source", "-").rsplit("/", 1)[-1]
print("plan-loop %s setup_s=%s include_files=%s include_from=%s first_validation_s=%s" % (
    sys.argv[1], secs(setup, "duration_ms"), (prep or {}).get("files", "-"), source,
    secs(val, "duration_ms")))
PY
for id in p1 p1-s1 p1-s1-ph1 p1-s1-ph1-c1 p1-s1-ph2 p1-s1-ph2-c1 p1-s1-ph3 p1-s1-ph3-c1; do
  ctl --json loop logs "$id" 2>/dev/null | python3 "$base/plan_report.py" "$id"
done

echo "== medians of $runs runs"
python3 - "$results" <<'PY'
import re, statistics, sys
vals = {}
for line in open(sys.argv[1]):
    p = line.split()[0]
    for k, v in re.findall(r"(\w+)=([\d.]+)", line):
        vals.setdefault((p, k), []).append(float(v))
for (p, k), v in sorted(vals.items()):
    print(f"{p} {k}: median {statistics.median(v):.2f} (min {min(v):.2f}, max {max(v):.2f}, n={len(v)})")
PY
df -T "$work" | tail -1 | awk '{print "file system of the worktrees:", $2}'
