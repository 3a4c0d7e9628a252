#!/usr/bin/env bash
# Runs the lane runner test suite and the looprd integration tests as an
# ordinary user, so the sandbox is proven to build from unprivileged user
# namespaces too (issue 3: "works as root and as an ordinary user"), and
# looprd to work as the user service it is meant to be. Sessions and CI run
# as root; this script drops to a throwaway system user for the run.
#
# Usage (as root): scripts/run-unprivileged-tests.sh [BUILD_DIR] [gtest args...]
#   BUILD_DIR defaults to build; the binaries must be built already
#   (runner_test daemon_integration_test loop_integration_test loop_provider_test
#   plan_integration_test disk_full_test memory_daemon_test output_schema_test
#   repo_settings_looprd_test loop_prep_test hooks_looprd_test approve_always_looprd_test cluster_looprd_test looprd looprctl loopr-runner loopr-tool loopr-attack-probe). The gtest args go to every
#   test program.
#   LOOPR_TEST_USER names the user (default loopr-unpriv); it is created
#   (useradd --system, no home, no login shell) if it does not exist.
#
# It fails, and never skips, when the machine does not allow unprivileged
# user namespaces: then the unprivileged path is simply not tested, and CI
# must say so.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
[ $# -gt 0 ] && shift
user=${LOOPR_TEST_USER:-loopr-unpriv}
binaries=(runner_test daemon_integration_test loop_integration_test loop_provider_test
  plan_integration_test disk_full_test memory_daemon_test output_schema_test
  repo_settings_looprd_test loop_prep_test hooks_looprd_test approve_always_looprd_test cluster_looprd_test looprd looprctl loopr-runner loopr-tool loopr-fetch loopr-attack-probe loopr-interleaved-printer)

fail() {
  echo "run-unprivileged-tests: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || fail "start me as root: I create a throwaway user and drop to it"
for binary in "${binaries[@]}"; do
  [ -x "$build/bin/$binary" ] || fail "$build/bin/$binary is missing; build it first:
  cmake --build $build --target ${binaries[*]}"
done

if ! id -u "$user" >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
fi
uid=$(id -u "$user")
gid=$(id -g "$user")
[ "$uid" -ne 0 ] || fail "user $user has uid 0; pick another with LOOPR_TEST_USER"

# Everything the run needs lives in one fresh folder the user owns: its
# TMPDIR (the tests' temporary trees) and a copy of the binaries, so the
# build tree's permissions do not matter.
work=$(mktemp -d /tmp/loopr-unprivileged.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" "$work/tmp"
for binary in "${binaries[@]}"; do
  cp "$build/bin/$binary" "$work/bin/"
done
chmod 0755 "$work" "$work/bin"
chown "$uid:$gid" "$work/tmp"
chmod 0700 "$work/tmp"

as_user() {
  setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all \
    --reset-env env TMPDIR="$work/tmp" LOOPR_BIN_DIR="$work/bin" "$@"
}

if ! as_user unshare --user --map-current-user true 2>"$work/userns-error"; then
  fail "unprivileged user namespaces are not available to $user ($(cat "$work/userns-error")).
The lane sandbox needs them when looprd runs as an ordinary user. Enable them, e.g.
  sysctl -w kernel.unprivileged_userns_clone=1   (Debian kernels before 6.x)
  sysctl -w user.max_user_namespaces=15000
  sysctl -w kernel.apparmor_restrict_unprivileged_userns=0   (Ubuntu 23.10+)
This is a failure, not a skip: the unprivileged path was not tested."
fi

status=0
echo "== runner_test as $user (uid $uid), TMPDIR=$work/tmp"
as_user "$work/bin/runner_test" "$@" || status=1
# The one test that needs root (it connects as another uid) runs in the main,
# root run; here it is left out by name rather than skipped.
echo "== daemon_integration_test as $user (uid $uid)"
as_user "$work/bin/daemon_integration_test" --gtest_filter='-*AClientOfAnotherUidIsRefused' "$@" ||
  status=1
# Loops as the user: looprd's git worktrees and commits, the lane sandbox
# and restarts after SIGKILL, in folders the user owns.
echo "== loop_integration_test as $user (uid $uid)"
as_user "$work/bin/loop_integration_test" "$@" || status=1
# Loops against local provider servers, and the key-leak and planted-hook
# attacks (SECURITY classes 26, 27), as the user.
echo "== loop_provider_test as $user (uid $uid)"
as_user "$work/bin/loop_provider_test" "$@" || status=1
# Plans as the user: whole trees, merges between the loops' branches, the
# gate, and SIGKILL of looprd in the middle of a tree.
echo "== plan_integration_test as $user (uid $uid)"
as_user "$work/bin/plan_integration_test" "$@" || status=1
# A full disk (SECURITY class 25) as the user: the test mounts its small
# tmpfs in a user and mount namespace of its own (identity uid map), so
# looprd still runs as the user.
echo "== disk_full_test as $user (uid $uid)"
as_user "$work/bin/disk_full_test" "$@" || status=1
# Memory notes as the user (SECURITY class 28: another uid's notes in the
# same database are never reached).
echo "== memory_daemon_test as $user (uid $uid)"
as_user "$work/bin/memory_daemon_test" "$@" || status=1

# Each tool's real output against its published output schema, from a looprd
# whose lanes are built from the user's own namespaces.
echo "== output_schema_test as $user (uid $uid)"
as_user "$work/bin/output_schema_test" "$@" || status=1

# A repository's own settings as the user (SECURITY class 29): honoured only
# once trusted, hostile files refused, commands run in the user's sandbox.
echo "== repo_settings_looprd_test as $user (uid $uid)"
as_user "$work/bin/repo_settings_looprd_test" "$@" || status=1

# Worktrees ready to work in as the user: include (no write-through into the
# checkout), setup on the user's heavy lane, its failure.
echo "== loop_prep_test as $user (uid $uid)"
as_user "$work/bin/loop_prep_test" "$@" || status=1

# Hooks as the user (SECURITY class 31): sandboxed in the user's no-net lane,
# hanging, crashing, flooding, fed hostile event JSON.
echo "== hooks_looprd_test as $user (uid $uid)"
as_user "$work/bin/hooks_looprd_test" "$@" || status=1

# approve --always as the user (SECURITY class 30): never broader than the
# command approved.
echo "== approve_always_looprd_test as $user (uid $uid)"
as_user "$work/bin/approve_always_looprd_test" "$@" || status=1

# Workers through NATS as the user (issue 28): looprd and its workers as
# ordinary processes, each worker's jobs in the user's own lane sandbox.
# (As root, the main run puts each worker in a network namespace of its own.)
echo "== cluster_looprd_test as $user (uid $uid)"
as_user "$work/bin/cluster_looprd_test" "$@" || status=1
exit "$status"
