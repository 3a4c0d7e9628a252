#!/usr/bin/env bash
# Configures and builds loopr into build/ (binaries in build/bin/).
# Usage: scripts/build.sh [extra cmake -D options...]
# CI=true turns warnings into errors (LOOPR_WERROR=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake -S . -B build -G Ninja -DLOOPR_WERROR="$werror" "$@" >/dev/null
cmake --build build
