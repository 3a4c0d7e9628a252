#!/usr/bin/env bash
# Sets up everything loopr needs and runs the whole test suite:
#   1. the normal build and every test (unit, property, integration) with ctest,
#      and, when run as root, the runner and daemon suites again as an
#      unprivileged user;
#   2. a second build under AddressSanitizer + UndefinedBehaviorSanitizer and
#      the same tests there;
#   3. a short libFuzzer run of each protocol decoder.
# Usage: scripts/test.sh [--quick]   (--quick: step 1 only)
# CI=true turns warnings into errors.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=false
[ "${1:-}" = "--quick" ] && quick=true

werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
jobs=$(nproc)
passed=0
failed=0

# Each stage's wall-clock time, printed at the end (CI allows 90 minutes).
stage_names=()
stage_seconds=()
stage_started=$SECONDS
stage_name=""
stage() {  # stage NAME: ends the running stage, starts NAME
  if [ -n "$stage_name" ]; then
    stage_names+=("$stage_name")
    stage_seconds+=($((SECONDS - stage_started)))
  fi
  stage_name=$1
  stage_started=$SECONDS
  [ -n "$stage_name" ] && echo "== $stage_name"
  return 0
}

stage "install dependencies"
./scripts/install-deps.sh

run_ctest() {  # run_ctest BUILD_DIR LABEL
  local log status=0
  log=$(mktemp)
  (cd "$1" && ctest --output-on-failure -j"$jobs" --timeout 600) 2>&1 | tee "$log" || status=$?
  local line
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [ -n "$line" ]; then
    local total bad
    total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
    bad=$(sed -E 's/.*tests passed, ([0-9]+) tests failed.*/\1/' <<<"$line")
    passed=$((passed + total - bad))
    failed=$((failed + bad))
  elif [ "$status" -ne 0 ]; then
    failed=$((failed + 1))
  fi
  rm -f "$log"
  echo "== $2: ctest exit $status"
  return 0
}

# CI's build-time choices (bench/README.md, "CI build time"): no debug info in
# the normal build (nothing in CI reads it; the package is stripped), line
# tables under the sanitizers (all their stack traces need), gold links.
# Both builds are unity builds (CMakeLists.txt), CI or not, so the test
# command catches two files that clash in one batch.
# Elsewhere the build types' defaults stay (passed empty, so a cached CI
# choice does not stick).
debug_level="" asan_debug_level="" linker=""
if [ "${CI:-}" = "true" ]; then
  debug_level=0 asan_debug_level=1 linker=gold
fi

stage "build (warnings as errors: $werror)"
# Tests and benchmarks on, whatever a build folder made by scripts/demo.sh says.
cmake -S . -B build -G Ninja -DLOOPR_WERROR="$werror" -DLOOPR_BUILD_TESTS=ON -DLOOPR_BUILD_BENCH=ON \
      -DCMAKE_UNITY_BUILD=ON -DLOOPR_DEBUG_LEVEL="$debug_level" -DLOOPR_LINKER="$linker" >/dev/null
cmake --build build
stage "npm packages for the MCP tests"
# The MCP SDK, the conformance suite and a Node 22, into build/npm (pinned;
# quick when present). tests/mcp and scripts/run-mcp-conformance.sh use them;
# without them those tests fail, saying so, and the others still run.
./scripts/install-test-npm.sh build || echo "== npm packages missing: the mcp tests will fail"
stage "tests"
run_ctest build "tests"

# As root, the sandbox is also proven from unprivileged user namespaces: the
# runner and daemon suites again as a throwaway user. (Run as an ordinary user, the normal
# run above already is that proof.)
if [ "$(id -u)" -eq 0 ]; then
  stage "runner and daemon tests as an unprivileged user"
  if ./scripts/run-unprivileged-tests.sh build --gtest_brief=1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
fi

# The .deb from that same build: lintian, a clean root, apt install and purge
# (scripts/check-package.sh; it needs root to install, as CI runs).
if [ "$(id -u)" -eq 0 ]; then
  stage "Debian package"
  if ./scripts/check-package.sh build; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
fi

if ! $quick; then
  stage "build under ASan+UBSan"
  # Debug (-O0): the sanitizers find the same bugs, and it compiles in about
  # half the time of an optimized build on CI's two cores.
  cmake -S . -B build-asan -G Ninja -DLOOPR_WERROR="$werror" -DLOOPR_SANITIZE=ON \
        -DCMAKE_BUILD_TYPE=Debug -DLOOPR_BUILD_BENCH=OFF -DCMAKE_UNITY_BUILD=ON \
        -DLOOPR_DEBUG_LEVEL="$asan_debug_level" -DLOOPR_LINKER="$linker" >/dev/null
  cmake --build build-asan
  ./scripts/install-test-npm.sh build-asan || echo "== npm packages missing: the mcp tests will fail"
  stage "tests under sanitizers"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_ctest build-asan "tests under sanitizers"

  stage "fuzz smoke"
  if ./scripts/fuzz-smoke.sh 20; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
fi

stage ""
echo
echo "== time per stage"
total=0
for i in "${!stage_names[@]}"; do
  printf '%6d s  %s\n' "${stage_seconds[$i]}" "${stage_names[$i]}"
  total=$((total + stage_seconds[i]))
done
printf '%6d s  total\n' "$total"
echo
echo "loopr: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
