#!/usr/bin/env bash
# Installs the npm packages that bench/daemon_load_bench compares looprd with
# (DESIGN.md §9: "faster than the MCP reference filesystem server") into
# BUILD_DIR/npm/node_modules: the reference filesystem server and the official
# MCP TypeScript SDK whose client drives it (bench/mcp_reference_read.mjs).
# Bench-only tools: never installed into the source tree and never by the
# CMake build; the versions are pinned here, and no package.json or lock file
# is committed.
#
# usage: scripts/install-bench-npm.sh BUILD_DIR
# needs: node >= 20 and npm on PATH, and the npm registry
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build="$1"
if [[ ! -d "$build" ]]; then
  echo "install-bench-npm: $build is not a folder (configure the build first)" >&2
  exit 2
fi
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "install-bench-npm: $tool not found (apt-get install nodejs npm)" >&2
    exit 2
  fi
done

packages=(
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/sdk@1.32.2"
)
prefix="$(cd "$build" && pwd)/npm"
mkdir -p "$prefix"
npm install --prefix "$prefix" --no-audit --no-fund --save-exact "${packages[@]}"
echo "installed into $prefix/node_modules:"
for p in "${packages[@]}"; do
  echo "  $p"
done
echo "run: $(cd "$build" && pwd)/bin/daemon_load_bench (finds $prefix/node_modules)"
