#!/usr/bin/env bash
# grep_vs_rg.sh: times `loopr-tool grep` against ripgrep on the same tree and
# patterns (DESIGN.md §9: grep within 1.2x of ripgrep). Builds nothing: uses
# $LOOPR_BIN (default build/bin/loopr-tool; use a Release build).
#
# The tree: copies of $SOURCES (default /usr/include and /usr/share, present
# on every Debian machine: C headers, documentation, locale and icon files,
# so text and binary files mixed) in a temporary directory, made once per run
# and read once before timing, so both tools search the page cache.
#
# Same work on both sides:
# - rg runs with --hidden (loopr-tool searches hidden files), --no-require-git
#   (loopr-tool honours .gitignore outside git repositories too),
#   --no-ignore-dot (loopr-tool does not read .ignore/.rgignore),
#   --no-ignore-global and --no-ignore-parent (loopr-tool reads neither the
#   user's git config nor anything above the worktree), --no-config.
# - Neither follows symlinks; both skip .git and binary files (NUL bytes).
# - rg prints every matching line; loopr-tool scans every file too (its
#   totals count all matches) but prints at most max_results lines: the
#   content rows pass max_results=10000 so that loopr-tool formats as much as
#   it may. The match and file counts of both are printed to show they agree.
#
# Usage: bench/grep_vs_rg.sh [OUT_DIR]   (hyperfine JSON/markdown go there)
set -euo pipefail

LOOPR_BIN=${LOOPR_BIN:-build/bin/loopr-tool}
LOOPR_BIN=$(realpath "$LOOPR_BIN")
OUT=${1:-$(mktemp -d /tmp/loopr-grep-bench-out-XXXXXX)}
RUNS=${RUNS:-10}
mkdir -p "$OUT"
for tool in rg hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "grep_vs_rg: $tool is required" >&2; exit 1; }
done
[ -x "$LOOPR_BIN" ] || { echo "grep_vs_rg: no $LOOPR_BIN (set LOOPR_BIN)" >&2; exit 1; }

TREE=$(mktemp -d /tmp/loopr-grep-bench-XXXXXX)
trap 'rm -rf "$TREE"' EXIT
SOURCES=${SOURCES:-/usr/include /usr/share}
for source in $SOURCES; do
  cp -a "$source" "$TREE/$(basename "$source")"
done
find "$TREE" -type f -print0 | xargs -0 cat > /dev/null  # warm the page cache
echo "tree: $TREE ($(du -sh "$TREE" | cut -f1), $(find "$TREE" -type f | wc -l) files)"
echo "loopr-tool: $LOOPR_BIN; rg: $(rg --version 2>/dev/null | head -1); cores: $(nproc)"

RG=(rg --hidden --no-require-git --no-ignore-dot --no-ignore-global --no-ignore-parent
    --no-config --color never)

# name | loopr-tool JSON arguments | rg flags | rg pattern | kind (lines|files)
cases=(
  'literal|{"pattern":"pthread_mutex_lock","max_results":10000}|-n --no-heading|pthread_mutex_lock|lines'
  'regex|{"pattern":"[A-Z]{2,}_MAX\\b","max_results":10000}|-n --no-heading|[A-Z]{2,}_MAX\b|lines'
  'case_insensitive|{"pattern":"copyright","case_insensitive":true,"output_mode":"count"}|-c -i|copyright|lines'
  'files|{"pattern":"GNU General Public License","output_mode":"files"}|-l|GNU General Public License|files'
)

summary="$OUT/summary.txt"
: > "$summary"
for entry in "${cases[@]}"; do
  IFS='|' read -r name args rg_flags pattern kind <<<"$entry"
  printf '%s' "$args" > "$OUT/$name.json"
  quoted=$(printf '%q' "$pattern")
  loopr_cmd="$LOOPR_BIN grep --worktree $TREE < $OUT/$name.json"
  rg_cmd="cd $TREE && ${RG[*]} $rg_flags $quoted ."

  # Equivalence: the counts each side reports.
  loopr_out=$(bash -c "$loopr_cmd")
  if [ "$kind" = files ]; then
    loopr_n=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["files_matched"])' <<<"$loopr_out")
    rg_n=$(bash -c "$rg_cmd" | wc -l)
  else
    loopr_n=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["match_count"])' <<<"$loopr_out")
    case_flag=""
    [[ " $rg_flags " == *" -i "* ]] && case_flag="-i"
    rg_n=$(bash -c "cd $TREE && ${RG[*]} -c $case_flag $quoted ." | awk -F: '{s += $NF} END {print s + 0}')
  fi
  echo "== $name: loopr-tool $kind=$loopr_n  rg $kind=$rg_n"

  hyperfine --warmup 2 --runs "$RUNS" --style basic \
    --export-json "$OUT/$name.hyperfine.json" --export-markdown "$OUT/$name.md" \
    -n "loopr-tool $name" "$loopr_cmd" -n "rg $name" "$rg_cmd" >/dev/null
  python3 - "$OUT/$name.hyperfine.json" "$name" "$loopr_n" "$rg_n" >>"$summary" <<'PY'
import json, sys, statistics
runs = json.load(open(sys.argv[1]))["results"]
loopr, rg = runs[0], runs[1]
def fmt(r):
    t = r["times"]
    return "median %7.1f ms  stddev %5.1f  min %7.1f  max %7.1f" % (
        statistics.median(t) * 1e3, statistics.stdev(t) * 1e3, min(t) * 1e3, max(t) * 1e3)
ratio = statistics.median(loopr["times"]) / statistics.median(rg["times"])
print("%-17s loopr-tool %s | rg %s | ratio %.2f | counts %s/%s" % (
    sys.argv[2], fmt(loopr), fmt(rg), ratio, sys.argv[3], sys.argv[4]))
PY
done
echo
cat "$summary"
echo "hyperfine exports: $OUT"
