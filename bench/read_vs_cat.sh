#!/usr/bin/env bash
# read_vs_cat.sh: times `loopr-tool read_file` (first page: offset 1, limit
# 2000, DESIGN.md §5) against `cat` of the same file, and `head -n 2000` as
# the like-for-like first page. Builds nothing: uses $LOOPR_BIN (default
# build/bin/loopr-tool; use a Release build).
#
# Files (made once in a temporary worktree):
#   small.txt  4 KiB of text            (DESIGN §9's 4 KiB read)
#   page.txt   7.5 MB of text, 100k lines (the first page is 2000 of them)
#   huge.txt   ~1 GiB of text            (first page must stay milliseconds;
#              cat must read it all, so that ratio shows constant cost)
#
# Usage: bench/read_vs_cat.sh [OUT_DIR]
set -euo pipefail

LOOPR_BIN=${LOOPR_BIN:-build/bin/loopr-tool}
LOOPR_BIN=$(realpath "$LOOPR_BIN")
OUT=${1:-$(mktemp -d /tmp/loopr-read-bench-out-XXXXXX)}
RUNS=${RUNS:-10}
mkdir -p "$OUT"
for tool in hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "read_vs_cat: $tool is required" >&2; exit 1; }
done
[ -x "$LOOPR_BIN" ] || { echo "read_vs_cat: no $LOOPR_BIN (set LOOPR_BIN)" >&2; exit 1; }

TREE=$(mktemp -d /tmp/loopr-read-bench-XXXXXX)
trap 'rm -rf "$TREE"' EXIT
python3 - "$TREE" <<'PY'
import sys
root = sys.argv[1]
line = "the quick brown fox jumps over the lazy dog, line %07d of the benchmark\n"
with open(root + "/small.txt", "w") as f:
    text = "".join(line % i for i in range(64))
    f.write(text[:4096])
with open(root + "/page.txt", "w") as f:
    f.write("".join(line % i for i in range(100000)))
with open(root + "/huge.txt", "w") as f:
    block = "".join(line % i for i in range(100000))
    for _ in range((1 << 30) // len(block) + 1):
        f.write(block)
PY
ls -l "$TREE"

# Refuse to time an error: one call must succeed first.
probe=$(printf '{"path":"small.txt"}' | "$LOOPR_BIN" read_file --worktree "$TREE") || {
  echo "read_vs_cat: read_file failed: $probe" >&2; exit 1; }

summary="$OUT/summary.txt"
: > "$summary"
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
print("%-22s read_file/cat %.2f  read_file/head %.2f" % (sys.argv[2], med[0] / med[1], med[0] / med[2]))
PY
done
cat "$summary"
echo "hyperfine exports: $OUT"
