#!/usr/bin/env bash
# Installs the npm packages that bench/daemon_load_bench compares looprd with
# (DESIGN.md §9: "faster than the MCP reference filesystem server") into
# BUILD_DIR/npm/node_modules: the reference filesystem server and the official
# MCP TypeScript SDK whose client drives it (bench/mcp_reference_read.mjs).
# Kept for the bench's instructions: scripts/install-test-npm.sh installs
# these along with the MCP tests' packages, pinned there.
#
# usage: scripts/install-bench-npm.sh BUILD_DIR
set -euo pipefail
exec "$(dirname "$0")/install-test-npm.sh" "$@"
