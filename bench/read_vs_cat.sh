#!/usr/bin/env bash
# read_vs_cat.sh: times `loopr-tool read_file` (first page: offset 1, limit
# 2000, DESIGN.md §5) against `cat` of the same file, and `head -n 2000` as
# the like-for-like first page. Builds nothing: uses $LOOPR_BIN (default
# build/bin/loopr-tool; use a Release build).
#
# Files (made once in a temporary worktree):
#   small.txt  4 KiB of text            (DESIGN §9's 4 KiB read)
#   page.txt   7.5 MB of text, 100k lines (the first page is 2000 of them)
#   huge.txt   $HUGE_MIB MiB of text (default 1024): the first page must stay
#              milliseconds while cat reads it all, so that ratio shows
#              read_file's constant cost
# First, the floor: starting loopr-tool at all (`--help`) against starting
# cat, with no shell in between (hyperfine -N).
#
# The file rows run through hyperfine's shell (the JSON arguments arrive on
# stdin); hyperfine subtracts the shell's own start-up from every row.
#
# Usage: [RUNS=10] [HUGE_MIB=1024] bench/read_vs_cat.sh [OUT_DIR]
set -euo pipefail

LOOPR_BIN=${LOOPR_BIN:-build/bin/loopr-tool}
LOOPR_BIN=$(realpath "$LOOPR_BIN")
OUT=${1:-$(mktemp -d /tmp/loopr-read-bench-out-XXXXXX)}
RUNS=${RUNS:-10}
HUGE_MIB=${HUGE_MIB:-1024}
mkdir -p "$OUT"
for tool in hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "read_vs_cat: $tool is required" >&2; exit 1; }
done
[ -x "$LOOPR_BIN" ] || { echo "read_vs_cat: no $LOOPR_BIN (set LOOPR_BIN)" >&2; exit 1; }

TREE=$(mktemp -d /tmp/loopr-read-bench-XXXXXX)
trap 'rm -rf "$TREE"' EXIT
python3 - "$TREE" "$HUGE_MIB" <<'PY'
import sys
root, huge_mib = sys.argv[1], int(sys.argv[2])
line = "the quick brown fox jumps over the lazy dog, line %07d of the benchmark\n"
with open(root + "/small.txt", "w") as f:
    text = "".join(line % i for i in range(64))
    f.write(text[:4096])
with open(root + "/page.txt", "w") as f:
    f.write("".join(line % i for i in range(100000)))
with open(root + "/huge.txt", "w") as f:
    block = "".join(line % i for i in range(100000))
    for _ in range((huge_mib << 20) // len(block) + 1):
        f.write(block)
PY
ls -l "$TREE"

# Refuse to time an error: one call must succeed first.
probe=$(printf '{"path":"small.txt"}' | "$LOOPR_BIN" read_file --worktree "$TREE") || {
  echo "read_vs_cat: read_file failed: $probe" >&2; exit 1; }

summary="$OUT/summary.txt"
: > "$summary"
hyperfine -N --warmup 3 --runs "$((RUNS * 3))" --style basic \
  --export-json "$OUT/startup.hyperfine.json" \
  -n "loopr-tool --help" "$LOOPR_BIN --help" -n "cat /dev/null" "cat /dev/null" >/dev/null
python3 - "$OUT/startup.hyperfine.json" >>"$summary" <<'PY'
import json, sys, statistics
runs = json.load(open(sys.argv[1]))["results"]
med = [statistics.median(r["times"]) for r in runs]
for r, m in zip(runs, med):
    print("%-22s median %8.2f ms  min %8.2f" % (r["command"], m * 1e3, min(r["times"]) * 1e3))
print("%-22s loopr-tool/cat %.2f" % ("start-up", med[0] / med[1]))
PY
for name in small page huge; do
  printf '{"path":"%s.txt"}' "$name" > "$OUT/$name.json"
  hyperfine --warmup 2 --runs "$RUNS" --style basic \
    --export-json "$OUT/$name.hyperfine.json" --export-markdown "$OUT/$name.md" \
    -n "read_file $name" "$LOOPR_BIN read_file --worktree $TREE < $OUT/$name.json" \
    -n "cat $name" "cat $TREE/$name.txt" \
    -n "head -n 2000 $name" "head -n 2000 $TREE/$name.txt" >/dev/null
  python3 - "$OUT/$name.hyperfine.json" "$name" >>"$summary" <<'PY'
import json, sys, statistics
runs = json.load(open(sys.argv[1]))["results"]
med = [statistics.median(r["times"]) for r in runs]
for r, m in zip(runs, med):
    t = r["times"]
    print("%-22s median %8.2f ms  stddev %6.2f  min %8.2f  max %8.2f" % (
        r["command"], m * 1e3, statistics.stdev(t) * 1e3, min(t) * 1e3, max(t) * 1e3))
def ratio(a, b):  # a row can fall to 0 after hyperfine subtracts the shell
    return "%.2f" % (a / b) if b > 0 else "n/a (below the shell-correction floor)"
print("%-22s read_file/cat %s  read_file/head %s" % (sys.argv[2], ratio(med[0], med[1]), ratio(med[0], med[2])))
PY
done
cat "$summary"
echo "hyperfine exports: $OUT"
