#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (ASan + UBSan) in
# build-fuzz/ and runs each one for a short time on a copy of its seed corpus
# (tests/fuzz/corpus/<target>/), so the checked-in seeds never change.
# Exits non-zero if a target fails to build or any run finds a crash, a leak,
# a timeout or undefined behaviour; the reproducer is kept in
# build-fuzz/fuzz-artifacts/<target>/.
#
# usage: scripts/fuzz-smoke.sh [seconds-per-target]      (default 20)
# env:   LOOPR_FUZZ_CXX        compiler (default clang++-14)
#        LOOPR_FUZZ_BUILD_DIR  build folder (default <repo>/build-fuzz)
set -euo pipefail

seconds="${1:-20}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [[ "$seconds" -eq 0 ]]; then
  echo "usage: $0 [seconds-per-target]" >&2
  exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LOOPR_FUZZ_BUILD_DIR:-$root/build-fuzz}"
cxx="${LOOPR_FUZZ_CXX:-clang++-14}"
targets=(fuzz_frame_reader fuzz_line_reader fuzz_runner_message fuzz_proxy_request fuzz_shell_words)

if ! command -v "$cxx" >/dev/null; then
  echo "fuzz-smoke: $cxx not found (apt-get install clang-14)" >&2
  exit 2
fi

CXX="$cxx" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOPR_FUZZ=ON -DLOOPR_BUILD_TESTS=OFF \
  -DLOOPR_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target "${targets[@]}"

work="$(mktemp -d "${TMPDIR:-/tmp}/loopr-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT

failed=()
for target in "${targets[@]}"; do
  corpus="$work/$target/corpus"
  artifacts="$work/$target/artifacts"
  mkdir -p "$corpus" "$artifacts"
  cp -R "$root/tests/fuzz/corpus/$target/." "$corpus/"
  echo "== $target: ${seconds}s"
  if "$build/bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" \
       >"$work/$target/log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$work/$target/log" || true
  else
    failed+=("$target")
    tail -n 60 "$work/$target/log" >&2
    mkdir -p "$build/fuzz-artifacts/$target"
    cp -R "$artifacts/." "$build/fuzz-artifacts/$target/"
    echo "fuzz-smoke: $target FAILED; reproducer in $build/fuzz-artifacts/$target/" >&2
  fi
done

if ((${#failed[@]} > 0)); then
  echo "fuzz-smoke: failures in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz-smoke: all ${#targets[@]} targets ran ${seconds}s without a finding"
